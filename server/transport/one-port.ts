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
 * browsers, curl and gRPC clients negotiate it: "h2" when the client offers it, else
 * HTTP/1.1. Node's TLS HTTP/2 server hands a connection that did not choose "h2" over on
 * its 'unknownProtocol' event; it goes to an HTTP/1.1 server of its own, as in cleartext,
 * so that no 'request' listener is shared by both protocols (see withStreamHandler).
 * With `limits`, the same limits as in cleartext (guardedPort): the first-bytes timeout
 * runs until the handshake is done and the protocol shown (tlsFirstBytes), and node's
 * HTTP/1.1 timeouts run on the HTTP/1.1 server. Pinned by test/e2e/tls.test.ts,
 * test/e2e/tls-limits.test.ts and test/e2e/client-certs.test.ts.
 */
export function createTlsOnePortServer(
  handler: DualHandler,
  options: http2.SecureServerOptions,
  streamHandler?: StreamHandler,
  limits?: ClientLimits,
): OnePortServer & { readonly h1: http.Server } {
  const guarded = withBodyGuard(handler, limits);
  const h1 = http.createServer(limits === undefined ? {} : h1Timeouts(limits), guarded);
  const h2 = withStreamHandler(
    http2.createSecureServer({ ...options, ALPNCallback: chooseProtocol }),
    guarded,
    streamHandler,
  );
  h2.on("unknownProtocol", (socket: Socket) => h1.emit("connection", socket));
  const firstBytes =
    limits === undefined ? () => {} : tlsFirstBytes(h2, limits.firstBytesTimeoutMs);
  const tcp = guardedPort({ h1, h2 }, limits, options, (socket) => {
    firstBytes(socket);
    h2.emit("connection", socket);
  });
  return { tcp, h1, h2 };
}

/** ALPN: HTTP/2 when the client offers it, else HTTP/1.1; a client offering neither is refused. */
function chooseProtocol({ protocols }: { protocols: string[] }): string | undefined {
  if (protocols.includes("h2")) return "h2";
  return protocols.includes("http/1.1") ? "http/1.1" : undefined;
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
 * refused (inside TLS when `tls` is given), `h1` (node's HTTP/1.1 server) checks its
 * connections' timeouts, and every
 * session of `h2` is guarded (guardSession); the connections admitted go to `serve`.
 * Every session of `h2` that stops reading after resets is closed (probeAfterResets), so
 * that no socket outlives its connection.
 */
function guardedPort(
  servers: {
    readonly h1: http.Server;
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
 * Lets `streamHandler` (the gRPC fast path) answer HTTP/2 streams before node's
 * compatibility API turns them into request and response objects for `handler`; the
 * streams it declines go on to `handler` as usual. Node installs that API on a server
 * when a 'request' listener is added, as a 'stream' listener of its own that makes a
 * request and a response of every stream (the response answers the stream's trailers),
 * so the serving server gets no 'request' listener when there is a `streamHandler`.
 * Instead a second server, `http2.createServer(handler)`, which never listens, is the
 * compatibility API: each declined stream is handed to it on its 'stream' event, as a
 * session hands its streams to its own server (the API uses its server only to emit
 * 'request', 'connect' and 'checkContinue' on it). Pinned by test/e2e/interop-grpc.test.ts
 * (both gRPC paths on one server), test/e2e/connect-get.test.ts and test/e2e/tls.test.ts.
 */
function withStreamHandler<S extends http2.Http2Server | http2.Http2SecureServer>(
  server: S,
  handler: DualHandler,
  streamHandler: StreamHandler | undefined,
): S {
  if (streamHandler === undefined) return server.on("request", handler) as S;
  const compat = http2.createServer(handler);
  const onStream = (
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    flags: number,
    rawHeaders: string[],
  ) => {
    if (!streamHandler(stream, headers)) compat.emit("stream", stream, headers, flags, rawHeaders);
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
