import http from "node:http";
import http2 from "node:http2";
import { createServer, type Server, type Socket } from "node:net";
import {
  type ClientLimits,
  connectionCap,
  firstBytesTimer,
  guardSession,
  tlsFirstBytes,
} from "./connection-guard.js";
import type { DualHandler, StreamHandler } from "./handler-types.js";
import { withRequestBodyGuard } from "./request-deadline.js";
import { probeAfterResets } from "./reset-probe.js";

/** The client preface every HTTP/2 connection with prior knowledge opens with. */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** One TCP port serving HTTP/2 and HTTP/1.1. */
export interface OnePortServer {
  /** The listening server. */
  readonly tcp: Server;
  /** The HTTP/1.1 server, when it is separate from the HTTP/2 one (cleartext). */
  readonly h1: http.Server | undefined;
  /** The HTTP/2 server (for TLS, the TLS server, which serves HTTP/1.1 itself). */
  readonly h2: http2.Http2Server | http2.Http2SecureServer;
}

/**
 * Serves HTTP/2 and HTTP/1.1 over TLS on one port, the protocol chosen by ALPN, as
 * browsers, curl and gRPC clients negotiate it. With `limits`, the same limits as in
 * cleartext (guardedPort): the first-bytes timeout runs until the handshake is done and
 * the protocol shown (tlsFirstBytes), and node's HTTP/1.1 timeouts run on the TLS server.
 */
export function createTlsOnePortServer(
  handler: DualHandler,
  options: http2.SecureServerOptions,
  streamHandler?: StreamHandler,
  limits?: ClientLimits,
): OnePortServer {
  const h2 = withStreamHandler(
    http2.createSecureServer({ ...options, allowHTTP1: true }),
    withBodyGuard(handler, limits),
    streamHandler,
  );
  // Node's HTTP/1.1 fallback sets its own timeouts in the constructor: they are replaced.
  if (limits !== undefined) Object.assign(h2, h1Timeouts(limits));
  const firstBytes =
    limits === undefined ? () => {} : tlsFirstBytes(h2, limits.firstBytesTimeoutMs);
  const tcp = guardedPort({ h1: h2, h2 }, limits, options, (socket) => {
    firstBytes(socket);
    h2.emit("connection", socket);
  });
  return { tcp, h1: undefined, h2 };
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
  const h1 = http.createServer(
    limits === undefined ? {} : h1Timeouts(limits),
    withBodyGuard(handler, limits),
  );
  const h2 = withStreamHandler(http2.createServer(h2Options), handler, streamHandler);
  const tcp = guardedPort({ h1, h2 }, limits, undefined, (socket) =>
    route(socket, h1, h2, limits?.firstBytesTimeoutMs),
  );
  return { tcp, h1, h2 };
}

/** How long an HTTP/1.1 keep-alive connection stays idle: node's http.Server default. */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/**
 * node's HTTP/1.1 timeouts for `limits`: the headers' and the idle keep-alive one (the
 * TLS server's HTTP/1.1 fallback has none of its own); the body's is our own.
 */
function h1Timeouts(limits: ClientLimits) {
  return {
    headersTimeout: limits.headersTimeoutMs,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // The body's own timer (withRequestBodyGuard) answers in the call's protocol.
    requestTimeout: 0,
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  };
}

/** `handler`, its HTTP/1.1 request bodies timed when there are `limits`. */
function withBodyGuard(handler: DualHandler, limits: ClientLimits | undefined): DualHandler {
  return limits === undefined ? handler : withRequestBodyGuard(handler, limits.requestTimeoutMs);
}

/**
 * The listening TCP server of both: with `limits`, connections beyond the cap are
 * refused (inside TLS when `tls` is given), `h1` (node's HTTP/1.1 server; for TLS the
 * TLS server, which serves HTTP/1.1 itself) checks its connections' timeouts, and every
 * session of `h2` is guarded (guardSession); the connections admitted go to `serve`.
 * Every session of `h2` that stops reading after resets is closed (probeAfterResets), so
 * that no socket outlives its connection.
 */
function guardedPort(
  servers: {
    readonly h1: http.Server | http2.Http2SecureServer;
    readonly h2: http2.Http2Server | http2.Http2SecureServer;
  },
  limits: ClientLimits | undefined,
  tls: http2.SecureServerOptions | undefined,
  serve: (socket: Socket) => void,
): Server {
  servers.h2.on("session", probeAfterResets);
  if (limits !== undefined) {
    // node's HTTP/1.1 server starts checking its connections' header timeouts when it
    // listens; this one never does (the TCP server below listens), so it is told it does.
    servers.h1.emit("listening");
    servers.h2.on("session", (session: http2.ServerHttp2Session) => guardSession(session, limits));
  }
  const admit = limits === undefined ? () => true : connectionCap(limits.maxConnections, tls);
  // noDelay: without it Nagle's algorithm holds small response frames back until the
  // client's delayed ACK, about 40 ms per call (http.Server sets it; net.Server does not).
  return createServer({ noDelay: true }, (socket) => {
    if (admit(socket)) serve(socket);
  });
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
