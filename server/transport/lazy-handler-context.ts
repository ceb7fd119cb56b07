import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { Socket } from "node:net";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import { requestHeaderOf } from "./grpc-wire.js";
import type { ConnectionValues } from "./handler-types.js";

/**
 * A handler context whose parts are made only when a handler reads them, as one object
 * of prototype getters with its parts in fields (not an object literal of closures made
 * for every call). Unary handlers
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
 * `ended()`, once the handler has answered, drops the signal's listeners and timer instead,
 * so that a call that made one does not make an error and an abort event for each stream
 * that closes after its answer (test/transport/lazy-handler-context.test.ts). The signal
 * is one listener of `onEnd`; a call that only needs to hear its end (a Start waiting on
 * another's flight) asks `onEnd` itself and makes no signal (server/rpc/call-end.ts).
 */
export class LazyContext implements HandlerContext {
  readonly service: DescService;
  readonly method: DescMethod;
  readonly protocolName = "grpc";
  readonly requestMethod = "POST";
  readonly url: string;
  readonly #stream: ServerHttp2Stream;
  readonly #headers: IncomingHttpHeaders;
  readonly #shutdown: AbortSignal;
  readonly #deadline: number | undefined;
  readonly #valuesOf: ConnectionValues | undefined;
  #controller: AbortController | undefined;
  #requestHeader: Headers | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;
  #values: ContextValues | undefined;
  /** The `onEnd` listeners not dropped yet (the signal's too), each by its drop. */
  #ends: (() => void)[] | undefined;

  constructor(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    route: { readonly service: DescService; readonly method: DescMethod },
    options: { readonly shutdownSignal: AbortSignal; readonly valuesOf?: ConnectionValues },
    timeoutMs: number | undefined,
  ) {
    this.service = route.service;
    this.method = route.method;
    this.url = headers[":path"] ?? "";
    this.#stream = stream;
    this.#headers = headers;
    this.#shutdown = options.shutdownSignal;
    this.#deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    this.#valuesOf = options.valuesOf;
  }

  timeoutMs(): number | undefined {
    return this.#deadline === undefined ? undefined : this.#deadline - Date.now();
  }

  /** Made when first read: aborted with the reason `onEnd` tells, and dropped with it. */
  get signal(): AbortSignal {
    if (this.#controller !== undefined) return this.#controller.signal;
    const c = new AbortController();
    this.#controller = c;
    this.onEnd((reason) => c.abort(reason));
    return c.signal;
  }

  /**
   * The call's end without a signal (server/rpc/call-end.ts): `listener` is told once the
   * reason the signal would abort with, when the client's stream closes, at the deadline
   * or at the shutdown, at once if one is past; the answer drops it, as does being told
   * and `ended()`. A plain listener on the stream, one on the shutdown and a timer: no
   * AbortController.
   */
  onEnd(listener: (reason: unknown) => void): () => void {
    const shutdown = this.#shutdown;
    const stream = this.#stream;
    const left = this.#deadline === undefined ? undefined : this.#deadline - Date.now();
    if (shutdown.aborted) listener(shutdown.reason);
    else if (stream.closed) listener(clientLeft());
    else if (left !== undefined && left <= 0) listener(timedOut());
    else return this.#listen(listener, left);
    return () => {};
  }

  #listen(listener: (reason: unknown) => void, left: number | undefined): () => void {
    const shutdown = this.#shutdown;
    const stream = this.#stream;
    let live = true;
    const tell = (reason: unknown) => {
      if (!live) return;
      drop();
      listener(reason);
    };
    const onClose = () => tell(clientLeft());
    const onShutdown = () => tell(shutdown.reason);
    const timer = left === undefined ? undefined : setTimeout(() => tell(timedOut()), left);
    const drop = () => {
      if (!live) return;
      live = false;
      stream.off("close", onClose);
      shutdown.removeEventListener("abort", onShutdown);
      clearTimeout(timer);
      const ends = this.#ends ?? [];
      const at = ends.indexOf(drop);
      if (at >= 0) ends.splice(at, 1);
    };
    this.#ends ??= [];
    this.#ends.push(drop);
    stream.once("close", onClose);
    shutdown.addEventListener("abort", onShutdown);
    return drop;
  }

  get requestHeader(): Headers {
    this.#requestHeader ??= new Headers(requestHeaderOf(this.#headers));
    return this.#requestHeader;
  }

  get responseHeader(): Headers {
    this.#responseHeader ??= new Headers();
    return this.#responseHeader;
  }

  get responseTrailer(): Headers {
    this.#responseTrailer ??= new Headers();
    return this.#responseTrailer;
  }

  get values(): ContextValues {
    this.#values ??=
      this.#valuesOf?.(this.#stream.session?.socket as Socket) ?? createContextValues();
    return this.#values;
  }

  /**
   * The call has answered: the signal (if one was made) keeps its state, and the
   * listeners and timers of `onEnd` (the signal's among them) are dropped.
   */
  ended(): void {
    // Each drop takes itself out of the list (most calls have none).
    if (this.#ends !== undefined) for (const drop of [...this.#ends]) drop();
  }
}

/** Why a call ends when its client's stream closes first. */
function clientLeft(): ConnectError {
  return new ConnectError("the client left", Code.Canceled);
}

/** Why a call ends at its caller's deadline (DEADLINE_EXCEEDED, as connect's own contexts). */
function timedOut(): ConnectError {
  return new ConnectError("the operation timed out", Code.DeadlineExceeded);
}
