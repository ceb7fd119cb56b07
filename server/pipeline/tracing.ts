import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type Attributes,
  type Context,
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";

/**
 * The service's tracer (scope `suggest-task`). Got once: a proxy that finds the SDK's
 * tracer once one is registered, even after this module loads (test/pipeline/tracing.test.ts).
 */
const tracer = trace.getTracer("suggest-task");

/**
 * Reads a caller's `traceparent` (and whatever else the registered propagator wants)
 * from the call's request headers. The headers are only touched when a propagator asks:
 * with no SDK registered the propagator is a no-op and the fast path never builds its
 * lazy `Headers` object (server/transport/lazy-handler-context.ts).
 */
const headerGetter: TextMapGetter<HandlerContext> = {
  get: (carrier, key) => carrier.requestHeader.get(key) ?? undefined,
  keys: (carrier) => [...carrier.requestHeader.keys()],
};

/** Codes that are the server's fault, as OpenTelemetry's RPC conventions count them. */
const SERVER_FAULTS: ReadonlySet<Code> = new Set([
  Code.Unknown,
  Code.DeadlineExceeded,
  Code.Unimplemented,
  Code.Internal,
  Code.Unavailable,
  Code.DataLoss,
]);

/** What every span of one method shares, computed once per method rather than per call. */
interface MethodSpan {
  readonly name: string;
  readonly options: { readonly kind: SpanKind; readonly attributes: Attributes };
}

function methodSpan(service: DescService, method: DescMethod): MethodSpan {
  return {
    name: `${service.typeName}/${method.name}`,
    options: {
      kind: SpanKind.SERVER,
      attributes: {
        "rpc.system": "grpc",
        "rpc.service": service.typeName,
        "rpc.method": method.name,
      },
    },
  };
}

/**
 * Starts a call's server span as a child of the caller's trace context, if it sent one;
 * answers the context with the span active, or undefined when the span is inert.
 */
function startServerSpan(spec: MethodSpan, handlerContext: HandlerContext): Context | undefined {
  const parent = propagation.extract(ROOT_CONTEXT, handlerContext, headerGetter);
  const span = tracer.startSpan(spec.name, spec.options, parent);
  return inert(span) ? undefined : trace.setSpan(parent, span);
}

/**
 * A span that neither records nor carries a trace (no SDK registered, no caller's trace
 * context): the call runs as if unwrapped, with no extra promise (bench/tracing-off.ts).
 */
function inert(span: Span): boolean {
  return !span.isRecording() && !isSpanContextValid(span.spanContext());
}

/** Ends a span with the call's gRPC status. */
function endSpan(span: Span, error: unknown): void {
  if (!span.isRecording()) {
    span.end();
    return;
  }
  const failure = error === undefined ? undefined : ConnectError.from(error);
  span.setAttribute("rpc.grpc.status_code", failure?.code ?? 0);
  if (failure !== undefined && SERVER_FAULTS.has(failure.code)) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.rawMessage });
  }
  span.end();
}

/**
 * Wraps a service implementation so that every call is a server span continuing the
 * caller's W3C trace context, and runs with that span active, so that the Redis script
 * spans (server/store/script-spans.ts) and chat-host spans (server/host/traced-host.ts)
 * it causes are its children. It wraps the implementation, not a Connect interceptor,
 * so the gRPC fast path and connect-node trace alike (test/pipeline/tracing.test.ts).
 * With only `@opentelemetry/api` loaded (no SDK registered, the default) every span is a
 * no-op.
 */
export function traceService<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
): ServiceImpl<S> {
  const wrapped: Record<string, unknown> = {};
  for (const method of service.methods) {
    const handler = (impl as Record<string, unknown>)[method.localName];
    if (typeof handler !== "function") continue;
    const spec = methodSpan(service, method);
    const call = (request: unknown, handlerContext: HandlerContext) =>
      handler.call(impl, request, handlerContext);
    if (method.methodKind === "unary") {
      wrapped[method.localName] = (request: unknown, handlerContext: HandlerContext) => {
        const active = startServerSpan(spec, handlerContext);
        if (active === undefined) return call(request, handlerContext);
        return traceUnary(active, () => call(request, handlerContext) as Promise<unknown>);
      };
    } else {
      wrapped[method.localName] = (request: unknown, handlerContext: HandlerContext) => {
        const active = startServerSpan(spec, handlerContext);
        const open = () => call(request, handlerContext);
        return active === undefined ? open() : traceStream(active, open, handlerContext);
      };
    }
  }
  return wrapped as ServiceImpl<S>;
}

/** A unary call runs with its span active; the span ends with the call's status. */
async function traceUnary(active: Context, run: () => Promise<unknown>): Promise<unknown> {
  const span = trace.getSpan(active) as Span;
  try {
    const result = await context.with(active, run);
    endSpan(span, undefined);
    return result;
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
}

/**
 * A stream's span lasts as long as the stream; each step of the inner stream runs with
 * the span active. A consumer that stops early (the client left) ends the inner stream
 * too, so its own cleanup runs.
 */
async function* traceStream(
  active: Context,
  open: () => unknown,
  handlerContext: HandlerContext,
): AsyncGenerator<unknown> {
  const span = trace.getSpan(active) as Span;
  let error: unknown;
  let finished = false;
  const inner = (context.with(active, open) as AsyncIterable<unknown>)[Symbol.asyncIterator]();
  try {
    for (;;) {
      let step: IteratorResult<unknown>;
      try {
        step = await context.with(active, () => inner.next());
      } catch (err) {
        finished = true;
        throw err;
      }
      if (step.done === true) {
        finished = true;
        return;
      }
      yield step.value;
    }
  } catch (err) {
    error = err;
    throw err;
  } finally {
    if (!finished) await context.with(active, () => inner.return?.());
    if (error === undefined && handlerContext.signal.aborted) {
      error = new ConnectError("the client left", Code.Canceled);
    }
    endSpan(span, error);
  }
}
