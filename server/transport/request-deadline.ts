import type http from "node:http";
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectTimeout, grpcTimeout } from "./call-timeout.js";
import { answerStream, errorAnswer } from "./error-answer.js";
import { headerValue } from "./grpc-wire.js";
import type { DualHandler } from "./handler-types.js";

/**
 * How long a request may take to arrive in full, in ms: `requestTimeoutMs`, or the
 * call's own deadline (`grpc-timeout`, `connect-timeout-ms`) when that is shorter. A
 * deadline that does not parse, or has already passed, is left to the call's handler,
 * which refuses it once the body is in, before any work: no timer of 0 ms races it.
 */
export function requestDeadlineMs(headers: IncomingHttpHeaders, requestTimeoutMs: number): number {
  const grpc = headerValue(headers["grpc-timeout"]);
  const connect = headerValue(headers["connect-timeout-ms"]);
  const own =
    grpc !== null
      ? grpcTimeout(grpc).timeoutMs
      : connect !== null
        ? connectTimeout(connect).timeoutMs
        : undefined;
  return Math.min(requestTimeoutMs, own ?? requestTimeoutMs);
}

/** The error of a request whose body did not arrive within `ms`. */
function tooSlow(ms: number): ConnectError {
  return new ConnectError(
    `the request did not arrive in full within ${ms} ms`,
    Code.DeadlineExceeded,
  );
}

/**
 * Answers an HTTP/2 stream DEADLINE_EXCEEDED and resets it when its request body has not
 * ended within `requestDeadlineMs` of the stream's start, whichever handler holds it
 * (the gRPC fast path or connect-node): a body that never ends would hold the stream,
 * its buffers and its handler forever.
 */
export function guardRequestBody(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  requestTimeoutMs: number,
): void {
  if (stream.readableEnded || stream.endAfterHeaders) return;
  const ms = requestDeadlineMs(headers, requestTimeoutMs);
  const timer = setTimeout(() => {
    // Ended, though not yet read: the handler's to answer.
    if (stream.destroyed || stream.state.remoteClose === 1) return;
    answerStream(stream, headers, tooSlow(ms));
  }, ms);
  const clear = () => clearTimeout(timer);
  stream.once("end", clear);
  stream.once("close", clear);
}

/**
 * The same for HTTP/1.1: `handler` wrapped so that a request whose body has not ended
 * within `requestDeadlineMs` of its headers is answered DEADLINE_EXCEEDED and its
 * connection closed (the rest of the body would never be read). HTTP/2 requests (a TLS
 * server hands both to one handler) are passed on as they are: guardRequestBody guards
 * their streams, and closing their socket would end every stream of the session.
 */
export function withRequestBodyGuard(handler: DualHandler, requestTimeoutMs: number): DualHandler {
  return (req, res) => {
    if (req.httpVersionMajor < 2) {
      h1BodyGuard(req as http.IncomingMessage, res as http.ServerResponse, requestTimeoutMs);
    }
    handler(req, res);
  };
}

/** Answers `req` DEADLINE_EXCEEDED and closes its connection if its body is late. */
function h1BodyGuard(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  requestTimeoutMs: number,
): void {
  if (req.complete) return;
  const ms = requestDeadlineMs(req.headers, requestTimeoutMs);
  const timer = setTimeout(() => {
    if (req.complete || res.destroyed) return;
    if (!res.headersSent) {
      const answer = errorAnswer(req.headers["content-type"] ?? "", tooSlow(ms));
      res.writeHead(answer.status, { ...answer.headers, connection: "close" });
      res.end(answer.body, () => req.socket.destroy());
    } else {
      req.socket.destroy();
    }
  }, ms);
  const clear = () => clearTimeout(timer);
  req.once("end", clear);
  req.once("close", clear);
}
