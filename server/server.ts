import type { Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Redis } from "ioredis";
import { type ChatHost, createRemoteChatHost } from "./chat-host.js";
import type { ServiceConfig } from "./config.js";
import { EmbeddedChatHost } from "./embedded-host.js";
import { createOnePortServer } from "./one-port.js";
import { createRedisClient } from "./redis-client.js";
import { createRoutes } from "./routes.js";
import { SuggestionStore } from "./suggestion-store.js";

/** What a running server exposes. */
export interface SuggestServer {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** The Redis client the server uses. */
  readonly redis: Redis;
  /** Stops accepting, lets calls in flight finish within the grace period, closes Redis. */
  close(): Promise<void>;
}

/** What starting a server needs beyond the config. */
export type ServerSettings = Pick<
  ServiceConfig,
  "host" | "port" | "chatHostUrl" | "readMaxBytes" | "maxTimeoutMs" | "shutdownGraceMs"
> & { readonly redisUrl: string };

/**
 * Wires the service: Redis, the chat host (remote or embedded), the routes and one port
 * serving gRPC, Connect and gRPC-Web over h2c and HTTP/1.1. Resolves once it listens.
 */
export async function startSuggestServer(settings: ServerSettings): Promise<SuggestServer> {
  const redis = createRedisClient(settings.redisUrl);
  redis.on("error", () => {
    // Connection errors surface on the calls that need Redis, as UNAVAILABLE.
  });
  const store = new SuggestionStore(redis);
  const embeddedHost = settings.chatHostUrl === undefined ? new EmbeddedChatHost(redis) : undefined;
  const host: ChatHost = embeddedHost ?? createRemoteChatHost(settings.chatHostUrl as string);
  const shutdown = new AbortController();
  const handler = connectNodeAdapter({
    routes: createRoutes({ store, host, embeddedHost }),
    readMaxBytes: settings.readMaxBytes,
    maxTimeoutMs: settings.maxTimeoutMs,
    shutdownSignal: shutdown.signal,
  });
  const { tcp, h1, h2 } = createOnePortServer(handler, {
    settings: { maxConcurrentStreams: 1000 },
  });
  const sessions = new Set<Http2Session>();
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(settings.port, settings.host, () => resolve());
  });
  const { port } = tcp.address() as AddressInfo;
  const host4url = settings.host.includes(":") ? `[${settings.host}]` : settings.host;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const closed = Promise.all([
        new Promise((resolve) => tcp.close(resolve)),
        new Promise((resolve) => h1.close(resolve)),
        new Promise((resolve) => h2.close(resolve)),
      ]);
      h1.closeIdleConnections();
      // GOAWAY: no new streams; streams in flight finish, then each session closes.
      for (const session of sessions) session.close();
      shutdown.abort();
      const grace = new Promise((resolve) => setTimeout(resolve, settings.shutdownGraceMs).unref());
      await Promise.race([closed, grace]);
      h1.closeAllConnections();
      for (const session of sessions) session.destroy();
      await redis.quit().catch(() => redis.disconnect());
    })();
    return closing;
  };
  return { url: `http://${host4url}:${port}`, port, redis, close };
}
