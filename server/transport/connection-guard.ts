import http2, {
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { Socket } from "node:net";
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
 * Counts connections, and answers those beyond `max` with a refusal in their own
 * protocol instead of serving them, so that a flood of connections cannot use up the
 * process's file descriptors (and with them its Redis connections) for everyone:
 * HTTP/1.1 gets a 503, HTTP/2 each stream UNAVAILABLE with the same message (gRPC,
 * Connect), then GOAWAY. At most REFUSALS_AT_ONCE are answered at a time, each within
 * REFUSAL_WAIT_MS; beyond that a connection is closed at once.
 * Answers the function to call for each new socket: true when it may be served.
 */
export function connectionCap(max: number): (socket: Socket) => boolean {
  let open = 0;
  let refusing = 0;
  const message = `suggest-task: too many connections (${max} open); try again later`;
  const refuser = h2Refuser(message);
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
    socket.once("data", (chunk: Buffer) => {
      const n = Math.min(chunk.length, H2_PREFACE_START.length);
      if (!chunk.subarray(0, n).equals(H2_PREFACE_START.subarray(0, n))) {
        socket.end(h1Refusal(message));
        return;
      }
      // As one-port.ts hands a connection to HTTP/2: the bytes back, the socket paused.
      socket.pause();
      socket.unshift(chunk);
      refuser.emit("connection", socket);
    });
    return false;
  };
}

/** An HTTP/2 server (never listening) that answers every stream UNAVAILABLE and closes. */
function h2Refuser(message: string): http2.Http2Server {
  const refuser = http2.createServer();
  refuser.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on("error", () => {});
    answerStream(stream, headers, new ConnectError(message, Code.Unavailable));
    stream.session?.close();
  });
  refuser.on("session", (session: Http2Session) => session.on("error", () => {}));
  return refuser;
}

/** HTTP/1.1 503, the connection closed after it. */
function h1Refusal(message: string): Buffer {
  const body = `${message}\n`;
  return Buffer.from(
    `HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n${body}`,
  );
}
