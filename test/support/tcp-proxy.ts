import { createConnection, createServer, type Server, type Socket } from "node:net";

/*
 * A TCP proxy in front of a Redis, the way a managed service's endpoint behaves when its
 * primary is replaced: the address stays, what answers behind it changes. It forwards
 * each connection to its target; on `hold()` it stops forwarding and, without closing
 * anything, keeps every connection (open ones and new ones) open and silent, as a
 * connection to a host that vanished hangs; `forward(target)` then sends new
 * connections to the target (held ones stay held until their client gives up on them).
 */

/** Where a proxy sends connections: a TCP port on 127.0.0.1. */
export interface ProxyTarget {
  readonly port: number;
}

/** A running proxy. */
export interface TcpProxy {
  /** `redis://127.0.0.1:<port>` of the proxy. */
  readonly url: string;
  readonly port: number;
  /** Client connections open now, forwarded or held. */
  open(): number;
  /** Client connections held now (accepted, never forwarded, never closed). */
  held(): number;
  /** From now on, connections hang: open ones stop being forwarded, new ones are only accepted. */
  hold(): void;
  /** From now on, new connections go to `target`. */
  forward(target: ProxyTarget): void;
  close(): Promise<void>;
}

/** Starts a proxy on a free port of 127.0.0.1 forwarding to `target`. */
export async function startTcpProxy(target: ProxyTarget): Promise<TcpProxy> {
  let current: ProxyTarget | undefined = target;
  const clients = new Set<Socket>();
  const held = new Set<Socket>();
  const upstreams = new Map<Socket, Socket>();
  const holdOne = (client: Socket) => {
    const upstream = upstreams.get(client);
    upstreams.delete(client);
    if (upstream !== undefined) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      upstream.removeAllListeners("close");
      upstream.on("error", () => {});
      upstream.destroy();
    }
    held.add(client);
    // Whatever the client writes is read and dropped: nothing answers.
    client.on("data", () => {});
  };
  const server: Server = createServer((client) => {
    clients.add(client);
    client.on("error", () => {});
    client.once("close", () => {
      clients.delete(client);
      held.delete(client);
      const upstream = upstreams.get(client);
      upstreams.delete(client);
      upstream?.destroy();
    });
    if (current === undefined) {
      holdOne(client);
      return;
    }
    const upstream = createConnection({ host: "127.0.0.1", port: current.port });
    upstreams.set(client, upstream);
    upstream.on("error", () => {});
    // A target that closes (it died) closes the client, as a dead server's RST would.
    upstream.once("close", () => {
      if (upstreams.get(client) === upstream) client.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    open: () => clients.size,
    held: () => held.size,
    hold() {
      current = undefined;
      for (const client of [...upstreams.keys()]) holdOne(client);
    },
    forward(next) {
      current = next;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const client of clients) client.destroy();
      await closed;
    },
  };
}
