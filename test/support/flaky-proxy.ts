import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";

/*
 * An HTTP/2 proxy in front of a service that counts the calls it receives and fails them on
 * demand, the ways a restart or a proxy fails a call: shared by test/sdk/sdk-retry.test.ts
 * and test/sdk/sdk-watch.test.ts.
 */

const {
  HTTP2_HEADER_STATUS,
  HTTP2_HEADER_PATH,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_INTERNAL_ERROR,
  NGHTTP2_CANCEL,
} = http2.constants;

/** What the proxy does with the next calls. */
export type ProxyMode =
  /** forward the call and its answer */
  | "pass"
  /** RST_STREAM(REFUSED_STREAM) before forwarding anything */
  | "refuse"
  /** an HTTP 503 with a text body, as a proxy with no server up answers */
  | "http-503"
  /** forward the call, let the service answer, then reset the stream (INTERNAL_ERROR) */
  | "reset-after-answer";

/** How `cut` ends the streams in flight. */
export type CutKind = "unavailable" | "ok" | "reset";

interface Pair {
  readonly down: http2.ServerHttp2Stream;
  readonly up: http2.ClientHttp2Stream;
  trailers: http2.OutgoingHttpHeaders;
}

/** A running proxy: its URL, what it received, and its switches. */
export interface FlakyProxy {
  readonly url: string;
  mode: ProxyMode;
  /** Calls received per method path (`/oda.suggest.v1.SuggestionService/SuggestTask`). */
  received(path: string): number;
  /** The request headers of every call received, in order. */
  readonly headers: http2.IncomingHttpHeaders[];
  /** Streams forwarded and still open. */
  open(): number;
  /** Ends every forwarded stream in flight: trailers UNAVAILABLE or OK, or RST_STREAM. */
  cut(kind: CutKind): void;
  close(): Promise<void>;
}

const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "host"]);

function forwardable(headers: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP.has(name) && !name.startsWith(":")) out[name] = value;
  }
  return out;
}

/** Starts a proxy on a free loopback port in front of the h2c service at `upstream`. */
export async function startFlakyProxy(upstream: string): Promise<FlakyProxy> {
  const client = http2.connect(upstream);
  client.on("error", () => {});
  const counts = new Map<string, number>();
  const headers: http2.IncomingHttpHeaders[] = [];
  const pairs = new Set<Pair>();
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.on("error", () => {});
    session.once("close", () => sessions.delete(session));
  });
  const proxy: FlakyProxy = {
    url: "",
    mode: "pass",
    received: (path) => counts.get(path) ?? 0,
    headers,
    open: () => pairs.size,
    cut(kind) {
      for (const pair of pairs) {
        pairs.delete(pair);
        pair.up.close(NGHTTP2_CANCEL);
        if (kind === "reset") {
          pair.down.close(NGHTTP2_INTERNAL_ERROR);
          continue;
        }
        pair.trailers =
          kind === "ok"
            ? { "grpc-status": "0" }
            : { "grpc-status": "14", "grpc-message": "the proxy cut the stream" };
        if (!pair.down.headersSent) {
          pair.down.respond(
            { [HTTP2_HEADER_STATUS]: 200, "content-type": "application/grpc", ...pair.trailers },
            { endStream: true },
          );
        } else pair.down.end();
      }
    },
    close: async () => {
      client.close();
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on("stream", (down, incoming) => {
    down.on("error", () => {});
    const path = String(incoming[HTTP2_HEADER_PATH]);
    counts.set(path, (counts.get(path) ?? 0) + 1);
    headers.push(incoming);
    if (proxy.mode === "refuse") {
      down.close(NGHTTP2_REFUSED_STREAM);
      return;
    }
    if (proxy.mode === "http-503") {
      down.respond({ [HTTP2_HEADER_STATUS]: 503, "content-type": "text/plain" });
      down.end("no server is available to handle this request");
      return;
    }
    const resetAfter = proxy.mode === "reset-after-answer";
    const up = client.request({
      ...forwardable(incoming),
      [HTTP2_HEADER_PATH]: path,
      ":method": "POST",
    });
    up.on("error", () => {});
    const pair: Pair = { down, up, trailers: {} };
    pairs.add(pair);
    down.once("close", () => {
      pairs.delete(pair);
      if (!up.closed) up.close(NGHTTP2_CANCEL);
    });
    down.pipe(up);
    down.on("wantTrailers", () => down.sendTrailers(pair.trailers));
    up.on("response", (answer) => {
      if (answer["grpc-status"] !== undefined) {
        pairs.delete(pair);
        if (resetAfter) down.close(NGHTTP2_INTERNAL_ERROR);
        else
          down.respond({ ...forwardable(answer), [HTTP2_HEADER_STATUS]: 200 }, { endStream: true });
        return;
      }
      down.respond(
        { ...forwardable(answer), [HTTP2_HEADER_STATUS]: answer[HTTP2_HEADER_STATUS] ?? 200 },
        { waitForTrailers: true },
      );
    });
    up.on("data", (chunk: Buffer) => {
      if (!down.closed) down.write(chunk);
    });
    up.on("trailers", (trailers) => {
      pair.trailers = forwardable(trailers);
    });
    up.on("end", () => {
      if (!pairs.has(pair)) return;
      pairs.delete(pair);
      if (resetAfter) down.close(NGHTTP2_INTERNAL_ERROR);
      else if (!down.closed) down.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(proxy, { url: `http://127.0.0.1:${port}` });
}
