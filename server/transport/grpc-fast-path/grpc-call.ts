import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { grpcTimeout } from "../call-timeout.js";
import { headerValue, parseFrame, toConnectError } from "../grpc-wire.js";
import type { CallRefused, ConnectionValues } from "../handler-types.js";
import { LazyContext } from "../lazy-handler-context.js";

/** What opening a fast-path call needs besides its stream and request. */
export interface OpenCallOptions {
  readonly shutdownSignal: AbortSignal;
  readonly valuesOf?: ConnectionValues;
  /** Told of a call refused here, before its handler ran. */
  readonly refused?: CallRefused;
}

/**
 * A fast-path call opened from its request (grpc-fast-path.ts for unary calls,
 * grpc-server-stream.ts for server streams): the caller's `grpc-timeout` read, the
 * request message parsed from its frame, and the handler's context. A deadline already
 * past throws DEADLINE_EXCEEDED, a malformed one or a body that does not parse the
 * caller's error (INVALID_ARGUMENT), before any context is made and any work done; each
 * such call is told to `refused`, so that it is logged and counted.
 */
export function openCall(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: { readonly service: DescService; readonly method: DescMethod },
  options: OpenCallOptions,
  body: Buffer,
): { readonly input: unknown; readonly context: LazyContext } {
  let input: unknown;
  let timeoutMs: number | undefined;
  try {
    const timeout = grpcTimeout(headerValue(headers["grpc-timeout"]));
    if (timeout.error !== undefined) throw timeout.error;
    timeoutMs = timeout.timeoutMs;
    input = parseFrame(route.method.input, body);
  } catch (err) {
    options.refused?.(route.method, toConnectError(err));
    throw err;
  }
  return { input, context: new LazyContext(stream, headers, route, options, timeoutMs) };
}
