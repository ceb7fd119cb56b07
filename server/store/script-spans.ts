import {
  type Attributes,
  context,
  isSpanContextValid,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";

/**
 * The service's tracer (scope `suggest-task`, as in server/pipeline/tracing.ts). Got once:
 * a proxy that finds the SDK's tracer once one is registered, even after this module loads.
 */
const tracer = trace.getTracer("suggest-task");

/** A client span's name and options, built once per operation rather than per call. */
export interface ClientSpanSpec {
  readonly name: string;
  readonly options: { readonly kind: SpanKind; readonly attributes: Attributes };
}

/**
 * Runs `call` inside a client span that is a child of the active span and is itself
 * active while the call runs (so a remote call can send it on as `traceparent`). With no
 * OpenTelemetry SDK and no trace to continue, the span is inert and `call` runs as if
 * unwrapped, with no extra promise (bench/tracing-off.ts).
 */
export function inClientSpan<T>(spec: ClientSpanSpec, call: () => Promise<T>): Promise<T> {
  const span = tracer.startSpan(spec.name, spec.options);
  if (!span.isRecording() && !isSpanContextValid(span.spanContext())) return call();
  return context.with(trace.setSpan(context.active(), span), call).then(
    (result) => {
      span.end();
      return result;
    },
    (err: unknown) => {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: err instanceof Error ? err.message : String(err),
      });
      span.end();
      throw err;
    },
  );
}

/**
 * The client span of a call of the script `name` on a client itself: `redis <name>`, a
 * child of whatever span is active (the RPC's, or a chat-host call's), which `runScript`
 * (store/run-script.ts) opens around each call; scripts queued in a pipeline or MULTI are
 * not spanned one by one (test/pipeline/tracing.test.ts).
 */
export function scriptSpan(name: string): ClientSpanSpec {
  return {
    name: `redis ${name}`,
    options: {
      kind: SpanKind.CLIENT,
      attributes: {
        "db.system.name": "redis",
        "db.operation.name": "EVALSHA",
        "db.stored_procedure.name": name,
      },
    },
  };
}
