import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";

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

/** How the pipeline runs calls. */
export interface PipelineOptions {
  readonly hooks: readonly CallHook[];
  /** The deadline of a unary call whose caller set none, in ms. */
  readonly defaultDeadlineMs: number;
}

/**
 * Wraps a service implementation so that every call runs through the hooks, and unary
 * calls without a deadline get the default one. The wrapping is around the
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
          const result = await withDefaultDeadline(
            handler.call(impl, request, context) as Promise<unknown>,
            context,
            options.defaultDeadlineMs,
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

/** Fails a call with DEADLINE_EXCEEDED when its caller set no deadline and it runs too long. */
function withDefaultDeadline<T>(
  result: Promise<T>,
  context: HandlerContext,
  defaultDeadlineMs: number,
): Promise<T> {
  if (context.timeoutMs() !== undefined) return result;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ConnectError("the call ran past its deadline", Code.DeadlineExceeded)),
      defaultDeadlineMs,
    );
  });
  return Promise.race([result, deadline]).finally(() => clearTimeout(timer));
}
