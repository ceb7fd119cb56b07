import http from "node:http";
import http2 from "node:http2";
import { createServer, type Server, type Socket } from "node:net";
import {
  type ClientLimits,
  connectionCap,
  firstBytesTimer,
  guardSession,
} from "./connection-guard.js";
import type { DualHandler, StreamHandler } from "./handler-types.js";
import { withRequestBodyGuard } from "./request-deadline.js";

/** The client preface every HTTP/2 connection with prior knowledge opens with. */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** One TCP port serving HTTP/2 and HTTP/1.1. */
export interface OnePortServer {
  /** The listening server. */
  readonly tcp: Server;
  /** The HTTP/1.1 server, when it is separate from the listening one (cleartext). */
  readonly h1: http.Server | undefined;
  /** The HTTP/2 server (for TLS, also the listening one, which serves HTTP/1.1 itself). */
  readonly h2: http2.Http2Server | http2.Http2SecureServer;
}

/**
 * Serves HTTP/2 and HTTP/1.1 over TLS on one port, the protocol chosen by ALPN, as
 * browsers, curl and gRPC clients negotiate it.
 */
export function createTlsOnePortServer(
  handler: DualHandler,
  options: http2.SecureServerOptions,
  streamHandler?: StreamHandler,
): OnePortServer {
  const h2 = withStreamHandler(
    http2.createSecureServer({ ...options, allowHTTP1: true }),
    handler,
    streamHandler,
  );
  return { tcp: h2, h1: undefined, h2 };
}

/**
 * Serves h2c (HTTP/2 with prior knowledge, as gRPC clients and `buf curl` speak it) and
 * HTTP/1.1 (Connect and gRPC-Web from browsers and plain `curl`) on one port. Node 20's
 * cleartext HTTP/2 server cannot fall back to HTTP/1.1, so each connection's first bytes
 * are read: the HTTP/2 preface goes to the HTTP/2 server, anything else to HTTP/1.1.
 */
export function createOnePortServer(
  handler: DualHandler,
  h2Options: http2.ServerOptions = {},
  streamHandler?: StreamHandler,
  limits?: ClientLimits,
): OnePortServer & { readonly h1: http.Server; readonly h2: http2.Http2Server } {
  const h1 =
    limits === undefined
      ? http.createServer(handler)
      : http.createServer(
          {
            headersTimeout: limits.headersTimeoutMs,
            // The body's own timer (withRequestBodyGuard) answers in the call's protocol.
            requestTimeout: 0,
            connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
          },
          withRequestBodyGuard(handler, limits.requestTimeoutMs),
        );
  // http.Server starts checking its connections' header timeouts when it listens; this
  // one never does (the TCP server below listens), so it is told it does.
  if (limits !== undefined) h1.emit("listening");
  const h2 = withStreamHandler(http2.createServer(h2Options), handler, streamHandler);
  if (limits !== undefined) h2.on("session", (session) => guardSession(session, limits));
  const admit = limits === undefined ? () => true : connectionCap(limits.maxConnections);
  // noDelay: without it Nagle's algorithm holds small response frames back until the
  // client's delayed ACK, about 40 ms per call (http.Server sets it; net.Server does not).
  const tcp = createServer({ noDelay: true }, (socket) => {
    if (admit(socket)) route(socket, h1, h2, limits?.firstBytesTimeoutMs);
  });
  return { tcp, h1, h2 };
}

/**
 * Lets `streamHandler` answer HTTP/2 streams before node's compatibility layer turns them
 * into request and response objects for `handler`; streams it declines go on to
 * `handler` as usual. The layer is installed by adding a 'request' listener, and is the
 * server's 'stream' listener then: it is taken off and called for declined streams.
 */
function withStreamHandler<S extends http2.Http2Server | http2.Http2SecureServer>(
  server: S,
  handler: DualHandler,
  streamHandler: StreamHandler | undefined,
): S {
  server.on("request", handler);
  if (streamHandler === undefined) return server;
  const compat = server.listeners("stream") as ((...args: unknown[]) => void)[];
  server.removeAllListeners("stream");
  const onStream = (
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    flags: number,
    rawHeaders: string[],
  ) => {
    if (streamHandler(stream, headers)) return;
    for (const listener of compat) listener.call(server, stream, headers, flags, rawHeaders);
  };
  server.on("stream", onStream);
  return server;
}

function route(
  socket: Socket,
  h1: http.Server,
  h2: http2.Http2Server,
  firstBytesTimeoutMs: number | undefined,
): void {
  let head = Buffer.alloc(0);
  const routed =
    firstBytesTimeoutMs === undefined ? () => {} : firstBytesTimer(socket, firstBytesTimeoutMs);
  const onError = () => {
    routed();
    socket.destroy();
  };
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const n = Math.min(head.length, H2_PREFACE.length);
    const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (isH2 && n < H2_PREFACE.length) return;
    routed();
    socket.off("data", onData);
    socket.off("error", onError);
    // Put the bytes back and hand the socket over. The HTTP/2 session reads them from the
    // socket's buffer (node's Http2Session does so for data already buffered) and then
    // the native handle directly; it must not be resumed here, or the bytes would flow
    // away as 'data' events first. HTTP/1.1 reads through JavaScript and needs a resume.
    socket.pause();
    socket.unshift(head);
    if (isH2) {
      h2.emit("connection", socket);
    } else {
      h1.emit("connection", socket);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.on("error", onError);
}
