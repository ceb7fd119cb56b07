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
 * throw to refuse the call, or answer a promise when it must wait (a JWT not verified
 * yet): the call goes on once it settles, and is refused if it rejects. `after` sees how
 * it ended.
 */
export interface CallHook {
  before?(call: Call): void | Promise<void>;
  after?(call: Call, error: ConnectError | undefined, durationMs: number): void;
  /**
   * A call its transport refused before the pipeline ran (call-refusals.ts): no `before`
   * ran, no request was read. Logged and counted like any other call.
   */
  refused?(call: RefusedCall, error: ConnectError): void;
}

/** A call refused by its transport before its request was read: which RPC it was. */
export type RefusedCall = Pick<Call, "service" | "method" | "procedure">;

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
 * same implementation applies the same concerns (docs/performance.md, "The gRPC path").
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
    const start = (request: unknown, context: HandlerContext): Started => {
      const call = { service, method, procedure, request, context };
      return { call, pending: runBefore(options.hooks, call, 0) };
    };
    const finish = (call: Call, began: number, error: unknown) => {
      const connectError = error === undefined ? undefined : ConnectError.from(error);
      const duration = performance.now() - began;
      for (const hook of options.hooks) hook.after?.(call, connectError, duration);
    };
    if (method.methodKind === "unary") {
      wrapped[method.localName] = wrapUnary(
        { service, method, procedure },
        (request, context) => handler.call(impl, request, context) as Promise<unknown>,
        options,
      );
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

/** Which RPC a call is, as the hooks see it: `procedure` names it in logs, metrics and grants. */
export type CallRoute = Pick<Call, "service" | "method" | "procedure">;

/**
 * One unary handler run through the hooks and within its budget (`withinBudget`): how
 * `wrapService` wraps each unary RPC, and how an adapter of another protocol (MCP) runs
 * the same RPC code under a procedure of its own (`/mcp/suggest_task`), so that auth,
 * tenants, deadlines, logs and metrics apply to it once, as to every call.
 */
export function wrapUnary<Q, R>(
  route: CallRoute,
  handler: (request: Q, context: HandlerContext) => Promise<R>,
  options: PipelineOptions,
): (request: Q, context: HandlerContext) => Promise<R> {
  return async (request, context) => {
    const began = performance.now();
    const call: Call = { ...route, request, context };
    let error: unknown;
    try {
      const pending = runBefore(options.hooks, call, 0);
      if (pending !== undefined) await pending;
      return await withinBudget(context, options, (bounded) => handler(request, bounded));
    } catch (err) {
      error = err;
      throw err;
    } finally {
      const connectError = error === undefined ? undefined : ConnectError.from(error);
      const duration = performance.now() - began;
      for (const hook of options.hooks) hook.after?.(call, connectError, duration);
    }
  };
}

/** A call whose `before` hooks ran, or still run (`pending`). */
interface Started {
  readonly call: Call;
  readonly pending: Promise<void> | undefined;
}

/**
 * Runs the `before` hooks from `from` on, in order: undefined when all ran at once (the
 * usual case, which costs no promise), else a promise of the rest, run after the one
 * that waits.
 */
function runBefore(
  hooks: readonly CallHook[],
  call: Call,
  from: number,
): Promise<void> | undefined {
  for (let i = from; i < hooks.length; i++) {
    const waiting = hooks[i]?.before?.(call);
    if (waiting !== undefined) return waiting.then(() => runBefore(hooks, call, i + 1));
  }
  return undefined;
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
  readonly #start: () => Started;
  readonly #open: () => AsyncIterable<unknown>;
  readonly #finish: (call: Call | undefined, began: number, error: unknown) => void;
  #call: Call | undefined;
  #source: AsyncIterator<unknown> | undefined;
  /** The handler's stream while a `before` hook waits (a JWT being verified). */
  #opening: Promise<AsyncIterator<unknown>> | undefined;
  #began = 0;
  #ended = false;

  constructor(
    start: () => Started,
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
      const result = await (this.#source ?? (await (this.#opening ?? this.#opened()))).next();
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
    if (this.#ended || this.#source !== undefined || this.#opening !== undefined) return undefined;
    let source: AsyncIterator<unknown> | Promise<AsyncIterator<unknown>>;
    try {
      source = this.#opened();
    } catch (err) {
      this.#end(err);
      throw err;
    }
    // A hook that waits: the transport reads the stream instead, `next` awaiting it.
    if (source instanceof Promise) return undefined;
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

  /**
   * The handler's stream, opened now: `before` runs, and the call's time starts; a
   * promise of it when a hook waits (it rejects when the hook refuses the call).
   */
  #opened(): AsyncIterator<unknown> | Promise<AsyncIterator<unknown>> {
    this.#began = performance.now();
    const { call, pending } = this.#start();
    this.#call = call;
    if (pending === undefined) return this.#openSource();
    const opening = pending.then(() => this.#openSource());
    // Read by `next` (or `#close`); a refusal seen by neither is not an unhandled one.
    opening.catch(() => {});
    this.#opening = opening;
    return opening;
  }

  #openSource(): AsyncIterator<unknown> {
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
    // A stream closed while a hook waits: closed once it has opened (or was refused).
    if (this.#source === undefined && this.#opening !== undefined) {
      await this.#opening.catch(() => undefined);
      if (this.#ended) return;
      if (this.#source === undefined) return this.#end(error);
    }
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
