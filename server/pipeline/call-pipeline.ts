import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type Pushing,
  type PushSink,
  type PushSource,
  pushSourceOf,
} from "../store/push-source.js";
import { type WorkDeadlines, withinBudget } from "./deadlines.js";

/** One call as the pipeline sees it. */
export interface Call {
  readonly service: DescService;
  readonly method: DescMethod;
  /** `/package.Service/Method`. */
  readonly procedure: string;
  /** The request message; for client and bidi streams, undefined. */
  readonly request: unknown;
  readonly context: HandlerContext;
}

/**
 * A concern that applies around every call (auth, checks, logs, metrics). `before` may
 * throw to refuse the call; `after` sees how it ended.
 */
export interface CallHook {
  before?(call: Call): void;
  after?(call: Call, error: ConnectError | undefined, durationMs: number): void;
}

/**
 * How the pipeline runs calls: the hooks, and the budget of a unary call's work
 * (`withinBudget`). Server streams get no budget of their own: they last as long as
 * the caller's deadline, or without one until the client leaves or shutdown.
 */
export interface PipelineOptions extends WorkDeadlines {
  readonly hooks: readonly CallHook[];
}

/**
 * Wraps a service implementation so that every call runs through the hooks, and unary
 * calls run within their budget (`withinBudget`). The wrapping is around the
 * implementation, not in Connect interceptors, so that every transport serving the
 * same implementation applies the same concerns (perf-notes.md).
 */
export function wrapService<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
  options: PipelineOptions,
): ServiceImpl<S> {
  const wrapped: Record<string, unknown> = {};
  for (const method of service.methods) {
    const handler = (impl as Record<string, unknown>)[method.localName];
    if (typeof handler !== "function") continue;
    const procedure = `/${service.typeName}/${method.name}`;
    const start = (request: unknown, context: HandlerContext): Call => {
      const call = { service, method, procedure, request, context };
      for (const hook of options.hooks) hook.before?.(call);
      return call;
    };
    const finish = (call: Call, began: number, error: unknown) => {
      const connectError = error === undefined ? undefined : ConnectError.from(error);
      const duration = performance.now() - began;
      for (const hook of options.hooks) hook.after?.(call, connectError, duration);
    };
    if (method.methodKind === "unary") {
      wrapped[method.localName] = async (request: unknown, context: HandlerContext) => {
        const began = performance.now();
        let call: Call | undefined;
        try {
          call = start(request, context);
          const result = await withinBudget(
            context,
            options,
            (bounded) => handler.call(impl, request, bounded) as Promise<unknown>,
          );
          finish(call, began, undefined);
          return result;
        } catch (err) {
          finish(call ?? { service, method, procedure, request, context }, began, err);
          throw err;
        }
      };
    } else {
      wrapped[method.localName] = (request: unknown, context: HandlerContext) => {
        const streamedRequest = method.methodKind === "server_streaming" ? request : undefined;
        return new HookedStream(
          () => start(streamedRequest, context),
          () => handler.call(impl, request, context) as AsyncIterable<unknown>,
          (call, began, error) =>
            finish(
              call ?? { service, method, procedure, request: streamedRequest, context },
              began,
              error,
            ),
        );
      };
    }
  }
  return wrapped as ServiceImpl<S>;
}

/**
 * A stream's messages passed through as they come, with the hooks around the whole
 * stream: `before` at the first read, `after` once when it ends (its last message, an
 * error, or the reader stopping early). Read as an iterator, or pushed when the
 * handler's stream can push (store/push-source.ts; `before` then runs at `pushTo`). Not
 * a generator: a generator's `yield*` costs turns per message, and one change of a chat
 * with 1,000 watchers passes through here 1,000 times.
 */
class HookedStream implements AsyncIterableIterator<unknown>, PushSource<unknown> {
  readonly #start: () => Call;
  readonly #open: () => AsyncIterable<unknown>;
  readonly #finish: (call: Call | undefined, began: number, error: unknown) => void;
  #call: Call | undefined;
  #source: AsyncIterator<unknown> | undefined;
  #began = 0;
  #ended = false;

  constructor(
    start: () => Call,
    open: () => AsyncIterable<unknown>,
    finish: (call: Call | undefined, began: number, error: unknown) => void,
  ) {
    this.#start = start;
    this.#open = open;
    this.#finish = finish;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<unknown>> {
    if (this.#ended) return { done: true, value: undefined };
    try {
      const result = await (this.#source ?? this.#opened()).next();
      if (result.done === true) this.#end(undefined);
      return result;
    } catch (err) {
      // A failed read leaves its source closed (a watch leaves its channel), as a loop would.
      this.#source?.return?.()?.catch(() => {});
      this.#end(err);
      throw err;
    }
  }

  /**
   * The handler's stream pushed to `sink`, its end running `after` before the sink hears
   * it; undefined when that stream cannot push (it is open then: read it). A `before`
   * hook that refuses, or a handler that throws at once, throws here, `after` told.
   */
  pushTo(sink: PushSink<unknown>): Pushing | undefined {
    if (this.#ended || this.#source !== undefined) return undefined;
    let source: AsyncIterator<unknown>;
    try {
      source = this.#opened();
    } catch (err) {
      this.#end(err);
      throw err;
    }
    const pushing = pushSourceOf<unknown>(source)?.pushTo({
      push: (message) => sink.push(message),
      end: (error) => {
        try {
          this.#end(error);
        } finally {
          sink.end(error);
        }
      },
    });
    if (pushing === undefined) return undefined;
    return {
      resume: () => pushing.resume(),
      stop: () => {
        pushing.stop();
        this.#end(undefined);
      },
    };
  }

  /** The handler's stream, opened now: `before` runs, and the call's time starts. */
  #opened(): AsyncIterator<unknown> {
    this.#began = performance.now();
    this.#call = this.#start();
    this.#source = this.#open()[Symbol.asyncIterator]();
    return this.#source;
  }

  /** The reader stops early: the handler's stream is closed, and the call ends OK. */
  async return(): Promise<IteratorResult<unknown>> {
    await this.#close(undefined);
    return { done: true, value: undefined };
  }

  /**
   * The reader failed (connect-node, when a write to the client fails): the handler's
   * stream is closed and the call ends with that error, or CANCELED when the client left.
   */
  async throw(err: unknown): Promise<IteratorResult<unknown>> {
    await this.#close(this.#call?.context.signal.aborted === true ? undefined : err);
    throw err;
  }

  async #close(error: unknown): Promise<void> {
    if (this.#ended) return;
    // A stream never read ran nothing: no hooks, as a generator never started.
    if (this.#source === undefined) {
      this.#ended = true;
      return;
    }
    try {
      await this.#source.return?.();
    } finally {
      this.#end(error);
    }
  }

  #end(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    const call = this.#call;
    // A stream the client left ends here too, without an error of its own.
    if (error === undefined && call !== undefined && call.context.signal.aborted) {
      error = new ConnectError("the client left", Code.Canceled);
    }
    this.#finish(call, this.#began, error);
  }
}
