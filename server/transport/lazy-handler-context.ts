import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import { requestHeaderOf } from "./grpc-wire.js";

/**
 * A handler context whose parts are made only when a handler reads them. Unary handlers
 * that read no signal and no headers, as SuggestTask and ListSuggestions, then cost no
 * AbortController, DOMException or Headers per call (the profile of the fast path showed
 * those near a tenth of its CPU); a watch, which reads the signal, costs one
 * AbortController and two listeners, removed when its stream closes, instead of
 * connect's linked controllers and three Headers (10,000 idle watchers in
 * bench/watch-load.ts).
 *
 * The signal aborts when the client's stream closes (reason: CANCELED), when the server
 * shuts down (the shutdown's reason) or at the deadline (reason: DEADLINE_EXCEEDED, as
 * connect's own contexts do, which WatchSuggestions tells apart), while the call runs:
 * `ended`, once the handler has answered, drops the signal's listeners and timer instead,
 * so that a call that made one (a Start waiting on another's flight) does not make an
 * error and an abort event for each stream that closes after its answer
 * (test/transport/lazy-handler-context.test.ts).
 */
export function lazyContext(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: { readonly service: DescService; readonly method: DescMethod },
  options: { readonly shutdownSignal: AbortSignal },
  timeoutMs: number | undefined,
): { readonly context: HandlerContext; readonly ended: () => void } {
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  let controller: AbortController | undefined;
  let requestHeader: Headers | undefined;
  let responseHeader: Headers | undefined;
  let responseTrailer: Headers | undefined;
  let values: ContextValues | undefined;
  let release = () => {};
  const signal = (): AbortSignal => {
    if (controller !== undefined) return controller.signal;
    const c = new AbortController();
    controller = c;
    const shutdown = options.shutdownSignal;
    let timer: NodeJS.Timeout | undefined;
    const onShutdown = () => c.abort(shutdown.reason);
    const onClose = () => {
      c.abort(new ConnectError("the client left", Code.Canceled));
      release();
    };
    release = () => {
      shutdown.removeEventListener("abort", onShutdown);
      stream.off("close", onClose);
      clearTimeout(timer);
    };
    if (shutdown.aborted) c.abort(shutdown.reason);
    else shutdown.addEventListener("abort", onShutdown);
    if (deadline !== undefined) {
      timer = setTimeout(
        () => c.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
        Math.max(0, deadline - Date.now()),
      );
    }
    if (stream.closed) onClose();
    else stream.once("close", onClose);
    return c.signal;
  };
  const context: HandlerContext = {
    service: route.service,
    method: route.method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: headers[":path"] ?? "",
    timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
    get signal() {
      return signal();
    },
    get requestHeader() {
      requestHeader ??= new Headers(requestHeaderOf(headers));
      return requestHeader;
    },
    get responseHeader() {
      responseHeader ??= new Headers();
      return responseHeader;
    },
    get responseTrailer() {
      responseTrailer ??= new Headers();
      return responseTrailer;
    },
    get values() {
      values ??= createContextValues();
      return values;
    },
  };
  return { context, ended: () => release() };
}
