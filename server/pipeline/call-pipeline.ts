import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
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
      wrapped[method.localName] = async function* (request: unknown, context: HandlerContext) {
        const began = performance.now();
        const streamedRequest = method.methodKind === "server_streaming" ? request : undefined;
        let call: Call | undefined;
        let error: unknown;
        try {
          call = start(streamedRequest, context);
          yield* handler.call(impl, request, context) as AsyncIterable<unknown>;
        } catch (err) {
          error = err;
          throw err;
        } finally {
          // A stream the client left ends here too, without an error of its own.
          if (error === undefined && context.signal.aborted) {
            error = new ConnectError("the client left", Code.Canceled);
          }
          finish(
            call ?? { service, method, procedure, request: streamedRequest, context },
            began,
            error,
          );
        }
      };
    }
  }
  return wrapped as ServiceImpl<S>;
}
