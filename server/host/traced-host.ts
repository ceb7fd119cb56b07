import { type Attributes, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { ChatHost } from "./chat-host.js";

/** The instrumentation scope of the service's own spans (as in server/pipeline/tracing.ts). */
const TRACER_NAME = "suggest-task";

const SERVICE = "oda.suggest.v1.ChatHostService";

/** A method's span name and options, built once. */
function spanSpec(method: string): [string, { kind: SpanKind; attributes: Attributes }] {
  return [
    `${SERVICE}/${method}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { "rpc.system": "grpc", "rpc.service": SERVICE, "rpc.method": method },
    },
  ];
}

/** Runs one host call inside its client span, ending the span with the call. */
function inSpan<T>(
  [name, options]: ReturnType<typeof spanSpec>,
  call: () => Promise<T>,
): Promise<T> {
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, options, (span: Span) =>
    call().then(
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
    ),
  );
}

/**
 * The chat host with a client span around each of its three calls, a child of the
 * active RPC span. The span is active while the call runs, so the embedded host's Redis
 * scripts nest under it, and a remote host's client sends it on as `traceparent`
 * (server/host/chat-host.ts), making the host's own server span its child
 * (test/pipeline/tracing.test.ts). No-op spans without an OpenTelemetry SDK.
 */
export function traceChatHost(host: ChatHost): ChatHost {
  const getSession = spanSpec("GetSession");
  const createChat = spanSpec("CreateChat");
  const postMessage = spanSpec("PostMessage");
  return {
    getSession: (request) => inSpan(getSession, () => host.getSession(request)),
    createChat: (request) => inSpan(createChat, () => host.createChat(request)),
    postMessage: (request) => inSpan(postMessage, () => host.postMessage(request)),
  };
}
