import type { IncomingHttpHeaders } from "node:http2";
import { create, type DescMessage, isMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { encodingOf } from "../codec/encoded-message.js";
import { encodedFrame, encodeFrame, frameBytes, keepFrame } from "./encoded-once.js";
import { encodeGrpcMessage } from "./grpc-message.js";
import { parseRequestMessage } from "./request-message.js";

/*
 * The gRPC wire format as the fast path (grpc-fast-path.ts) speaks it: length-prefixed
 * message frames, and statuses as headers. Errors are the ones connect-node answers
 * with, except a request that does not parse, which is the caller's error here.
 */

/** The headers of every gRPC response the fast path answers (statuses go beside them or in trailers). */
export const GRPC_RESPONSE_HEADERS = {
  ":status": 200,
  "content-type": "application/grpc",
  "grpc-accept-encoding": "identity",
};

/** The trailers of a call that ended OK. */
export const GRPC_OK: Readonly<Record<string, string>> = Object.freeze({ "grpc-status": "0" });

/** A response message in its gRPC frame; a frozen message's is encoded once (encoded-once.ts). */
export function frameOf(schema: DescMessage, result: unknown): Buffer {
  const output = isMessage(result, schema) ? result : create(schema, result as never);
  const known = encodedFrame(output);
  if (known !== undefined) return known;
  // A handler may have attached the message's encoding (codec/encoded-message.ts).
  const attached = encodingOf(output);
  const frame =
    attached === undefined
      ? encodeFrame(schema, output)
      : frameBytes(attached, Object.isFrozen(output));
  keepFrame(output, frame);
  return frame;
}

/** The one message of a unary request, parsed; errors as connect-node answers them. */
export function parseFrame(schema: DescMessage, body: Buffer): unknown {
  if (body.length < 5) {
    throw new ConnectError(
      "protocol error: missing input message for unary method",
      Code.Unimplemented,
    );
  }
  if ((body[0] as number) & 0b1) {
    throw new ConnectError(
      "protocol error: received compressed message without grpc-encoding",
      Code.Internal,
    );
  }
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) {
    throw new ConnectError(
      body.length < 5 + length
        ? "protocol error: incomplete envelope"
        : "protocol error: received extra input message for unary method",
      body.length < 5 + length ? Code.InvalidArgument : Code.Unimplemented,
    );
  }
  return parseRequestMessage(schema, body.subarray(5));
}

/** The first value of a header. */
export function headerValue(value: string | string[] | undefined): string | null {
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/** The request's ordinary headers (no pseudo-headers), as handlers see them. */
export function requestHeaderOf(headers: IncomingHttpHeaders): [string, string][] {
  const entries: [string, string][] = [];
  for (const key in headers) {
    if (key.charCodeAt(0) === 58 /* ':' */) continue;
    const value = headers[key];
    if (typeof value === "string") entries.push([key, value]);
    else if (Array.isArray(value)) for (const v of value) entries.push([key, v]);
  }
  return entries;
}

/** A ConnectError passes; anything else is INTERNAL, with the original kept as its cause. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

/** The status of an error as gRPC headers: code, spec-encoded message and details. */
export function statusOf(error: ConnectError): Record<string, string> {
  const status = setTrailerStatus(new Headers(), error);
  const out: Record<string, string> = {};
  status.forEach((value, key) => {
    out[key] = key === "grpc-message" ? encodeGrpcMessage(error.rawMessage) : value;
  });
  return out;
}
