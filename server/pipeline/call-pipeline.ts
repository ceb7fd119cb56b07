import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { type WorkDeadlines, withinBudget } from "./deadlines.js";
import { HookedStream, type Started } from "./hooked-stream.js";

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
    const start = (request: unknown, context: HandlerContext): Started<Call> => {
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
    // Written out, not spread from `route`: a spread's copy gets a map of its own each
    // call, and every hook that reads the call (logs, metrics) then misses its cache.
    const { service, method, procedure } = route;
    const call: Call = { service, method, procedure, request, context };
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

/**
 * Runs the `before` hooks from `from` on, in order: undefined when all ran at once (the
 * usual case, which costs no promise), else a promise of the rest, run after the one
 * that waits.
 */
export function runBefore(
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
