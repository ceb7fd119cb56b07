import http2, {
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { Socket } from "node:net";
import type { SecureContextOptions, TLSSocket } from "node:tls";
import { Code, ConnectError } from "@connectrpc/connect";
import { answerStream } from "./error-answer.js";
import { guardRequestBody } from "./request-deadline.js";

/** The timeouts of the stages a client controls, and the cap on connections. */
export interface ClientLimits {
  /** How long a new connection may take to show its protocol (its first bytes), in ms. */
  readonly firstBytesTimeoutMs: number;
  /** How long an HTTP/1.1 request's headers may take, in ms. */
  readonly headersTimeoutMs: number;
  /** How long a request may take to arrive in full, from its start, in ms. */
  readonly requestTimeoutMs: number;
  /** How long an HTTP/2 session with no stream open stays, in ms. */
  readonly idleSessionTimeoutMs: number;
  /** The most connections served at once. */
  readonly maxConnections: number;
}

/** The HTTP/2 client preface, whose first bytes tell HTTP/2 from HTTP/1.1. */
const H2_PREFACE_START = Buffer.from("PRI * HTTP/2.0");

/** Connections refused at a time, each waiting at most REFUSAL_WAIT_MS for its first bytes. */
const REFUSALS_AT_ONCE = 64;
const REFUSAL_WAIT_MS = 1_000;

/**
 * Closes an HTTP/2 session that has had no stream open for `idleMs`, and guards each
 * stream's request body (guardRequestBody). A stream that is open, even one receiving
 * nothing for a long while (a watcher), keeps its session.
 */
export function guardSession(session: Http2Session, limits: ClientLimits): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      if (!session.closed && !session.destroyed) session.close();
    }, limits.idleSessionTimeoutMs);
    timer.unref();
  };
  session.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    guardRequestBody(stream, headers, limits.requestTimeoutMs);
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      open--;
      if (open === 0 && !session.closed) arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}

/** Destroys `socket` unless `done` is called within `ms`; answers `done`. */
export function firstBytesTimer(socket: Socket, ms: number): () => void {
  const timer = setTimeout(() => socket.destroy(), ms);
  timer.unref();
  const done = () => clearTimeout(timer);
  socket.once("close", done);
  return done;
}

/**
 * The first-bytes timer of TLS connections to `server`: from the TCP accept, a
 * connection has `ms` to finish its TLS handshake and show its protocol, as a cleartext
 * one has to show its first bytes. HTTP/1.1 (by ALPN, or none) has shown it with the
 * handshake, its headers timeout runs from there; HTTP/2 once its preface and SETTINGS
 * have come. The TLS socket is matched to its TCP socket by the client's address and
 * port. Answers the function to call for each TCP socket before handing it to `server`.
 */
export function tlsFirstBytes(server: http2.Http2SecureServer, ms: number): (raw: Socket) => void {
  const pending = new Map<string, () => void>();
  const keyOf = (s: Socket) => `${s.remoteAddress}|${s.remotePort}`;
  const shown = (s: Socket) => pending.get(keyOf(s))?.();
  server.on("secureConnection", (socket: TLSSocket) => {
    if (socket.alpnProtocol !== "h2") shown(socket);
  });
  server.on("session", (session: Http2Session) => {
    session.once("remoteSettings", () => shown(session.socket));
  });
  return (raw) => {
    const key = keyOf(raw);
    const done = firstBytesTimer(raw, ms);
    pending.set(key, done);
    raw.once("close", () => {
      if (pending.get(key) === done) pending.delete(key);
    });
  };
}

/**
 * Counts connections, and answers those beyond `max` with a refusal in their own
 * protocol instead of serving them, so that a flood of connections cannot use up the
 * process's file descriptors (and with them its Redis connections) for everyone:
 * HTTP/1.1 gets a 503, HTTP/2 each stream UNAVAILABLE with the same message (gRPC,
 * Connect), then GOAWAY. At most REFUSALS_AT_ONCE are answered at a time, each within
 * REFUSAL_WAIT_MS; beyond that a connection is closed at once. With `tls` (the server's
 * certificate) the refusal is given inside a TLS session, HTTP/2 or HTTP/1.1 by ALPN.
 * Answers the function to call for each new socket: true when it may be served.
 */
export function connectionCap(
  max: number,
  tls?: SecureContextOptions,
): (socket: Socket) => boolean {
  let open = 0;
  let refusing = 0;
  const message = `suggest-task: too many connections (${max} open); try again later`;
  const refuse = refusal(message, tls);
  return (socket) => {
    if (open < max) {
      open++;
      socket.once("close", () => open--);
      return true;
    }
    if (refusing >= REFUSALS_AT_ONCE) {
      socket.destroy();
      return false;
    }
    refusing++;
    socket.once("close", () => refusing--);
    socket.on("error", () => socket.destroy());
    socket.setTimeout(REFUSAL_WAIT_MS, () => socket.destroy());
    refuse(socket);
    return false;
  };
}

/**
 * Answers a connection's first request with the refusal `message`, in the protocol its
 * first bytes show, or inside TLS when `tls` is given (its ALPN choosing the protocol);
 * answers the function that does it.
 */
function refusal(message: string, tls: SecureContextOptions | undefined): (raw: Socket) => void {
  const h1 = h1Refusal(message);
  const unavailable = new ConnectError(message, Code.Unavailable);
  const refuseStream = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on("error", () => {});
    answerStream(stream, headers, unavailable);
    stream.session?.close();
  };
  if (tls !== undefined) {
    // Never listening: node's TLS server does the handshake, HTTP/2 or HTTP/1.1 by ALPN.
    const secure = http2.createSecureServer({ ...tls, allowHTTP1: true }, (req, res) => {
      if (req instanceof http2.Http2ServerRequest) refuseStream(req.stream, req.headers);
      else res.writeHead(503, h1.headers).end(h1.body);
    });
    secure.on("session", (session: Http2Session) => session.on("error", () => {}));
    return (raw) => secure.emit("connection", raw);
  }
  const refuser = http2.createServer();
  refuser.on("stream", refuseStream);
  refuser.on("session", (session: Http2Session) => session.on("error", () => {}));
  return (socket) => {
    socket.once("data", (chunk: Buffer) => {
      const n = Math.min(chunk.length, H2_PREFACE_START.length);
      if (!chunk.subarray(0, n).equals(H2_PREFACE_START.subarray(0, n))) {
        const head = Object.entries(h1.headers).map(([name, value]) => `${name}: ${value}\r\n`);
        socket.end(`HTTP/1.1 503 Service Unavailable\r\n${head.join("")}\r\n${h1.body}`);
        return;
      }
      // As one-port.ts hands a connection to HTTP/2: the bytes back, the socket paused.
      socket.pause();
      socket.unshift(chunk);
      refuser.emit("connection", socket);
    });
  };
}

/** The HTTP/1.1 503 of a refused connection, the connection closed after it. */
function h1Refusal(message: string): { headers: Record<string, string>; body: string } {
  const body = `${message}\n`;
  const headers = {
    "content-type": "text/plain; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    "retry-after": "1",
    connection: "close",
  };
  return { headers, body };
}
