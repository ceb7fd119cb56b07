import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { callerTimeout } from "./call-timeout.js";
import { headerValue, parseFrame } from "./grpc-wire.js";
import type { ConnectionValues } from "./handler-types.js";
import { LazyContext } from "./lazy-handler-context.js";

/**
 * A fast-path call opened from its request (grpc-fast-path.ts for unary calls,
 * grpc-server-stream.ts for server streams): the request message parsed from its frame,
 * the caller's `grpc-timeout` read, and the handler's context. A body that does not
 * parse or a timeout that is not valid throws the caller's error (INVALID_ARGUMENT),
 * before any context is made.
 */
export function openCall(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: { readonly service: DescService; readonly method: DescMethod },
  options: { readonly shutdownSignal: AbortSignal; readonly valuesOf?: ConnectionValues },
  body: Buffer,
): { readonly input: unknown; readonly context: LazyContext } {
  const input = parseFrame(route.method.input, body);
  const timeout = callerTimeout(headerValue(headers["grpc-timeout"]));
  if (timeout.error !== undefined) throw timeout.error;
  return { input, context: new LazyContext(stream, headers, route, options, timeout.timeoutMs) };
}
