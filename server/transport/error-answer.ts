import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { constants } from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, endStreamFlag, errorToJson } from "@connectrpc/connect/protocol-connect";
import { headerValue, statusOf } from "./grpc-wire.js";

/** An error answer written by the transport itself, before or instead of a handler's. */
export interface ErrorAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer | undefined;
}

/**
 * `error` in the protocol of a request of this content type: gRPC and gRPC-Web
 * trailers-only, a Connect end-stream message for Connect streams, a Connect error body
 * (its HTTP status from the code) otherwise.
 */
export function errorAnswer(contentType: string, error: ConnectError): ErrorAnswer {
  if (contentType.startsWith("application/grpc")) {
    return {
      status: 200,
      headers: { "content-type": contentType, ...statusOf(error) },
      body: undefined,
    };
  }
  if (contentType.startsWith("application/connect+")) {
    const json = Buffer.from(JSON.stringify({ error: errorToJson(error, undefined) }));
    const head = Buffer.alloc(5);
    head.writeUInt8(endStreamFlag, 0);
    head.writeUInt32BE(json.length, 1);
    return {
      status: 200,
      headers: { "content-type": contentType },
      body: Buffer.concat([head, json]),
    };
  }
  return {
    status: codeToHttpStatus(error.code),
    headers: { "content-type": "application/json" },
    body: Buffer.from(JSON.stringify(errorToJson(error, undefined))),
  };
}

/**
 * Answers an HTTP/2 stream with `error` (unless a response was already sent) and closes
 * it, its request body unread.
 */
export function answerStream(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  error: ConnectError,
): void {
  if (stream.destroyed) return;
  if (!stream.headersSent) {
    const answer = errorAnswer(headerValue(headers["content-type"]) ?? "", error);
    stream.respond(
      { ":status": answer.status, ...answer.headers },
      { endStream: answer.body === undefined },
    );
    if (answer.body !== undefined) stream.end(answer.body);
  }
  closeUnread(stream);
}

/**
 * Resets a stream whose answer was just given, its request body unread (RST_STREAM
 * NO_ERROR, so the client stops sending). The reset waits a turn of the event loop:
 * some Node releases (22.23 among them) put a reset submitted in the same turn as the
 * answer's HEADERS ahead of them, and the client then sees a stream with no answer.
 */
export function closeUnread(stream: ServerHttp2Stream): void {
  setImmediate(() => {
    if (!stream.destroyed) stream.close(constants.NGHTTP2_NO_ERROR);
  });
}
