import { type Attributes, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Cluster, Redis } from "ioredis";

/** The instrumentation scope of the service's own spans (as in server/pipeline/tracing.ts). */
const TRACER_NAME = "suggest-task";

/**
 * Makes every call of the script command `name` on `client` a client span `redis <name>`,
 * a child of whatever span is active (the RPC's, or a chat-host call's). It replaces the
 * method `defineCommand` put on the client, so it is the one place every script call
 * goes through; scripts queued in a pipeline or MULTI are not spanned one by one.
 * With no OpenTelemetry SDK registered the span is a no-op (test/pipeline/tracing.test.ts).
 */
export function traceScript(client: Redis | Cluster, name: string): void {
  const target = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const command = target[name];
  if (typeof command !== "function") return;
  const spanName = `redis ${name}`;
  const options: { kind: SpanKind; attributes: Attributes } = {
    kind: SpanKind.CLIENT,
    attributes: {
      "db.system.name": "redis",
      "db.operation.name": "EVALSHA",
      "db.stored_procedure.name": name,
    },
  };
  target[name] = function tracedScript(this: unknown, ...args: unknown[]) {
    // ioredis copies the method onto every pipeline and MULTI (and onto the one it uses
    // for auto-pipelining); there it queues the command and answers the pipeline.
    if (this !== client) return command.apply(this, args);
    return trace.getTracer(TRACER_NAME).startActiveSpan(spanName, options, (span) =>
      command.apply(this, args).then(
        (reply) => {
          span.end();
          return reply;
        },
        (err: unknown) => {
          span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
          span.end();
          throw err;
        },
      ),
    );
  };
}
