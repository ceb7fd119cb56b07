import { SpanKind } from "@opentelemetry/api";
import { type ClientSpanSpec, inClientSpan } from "../store/script-spans.js";
import type { ChatHost } from "./chat-host.js";

const SERVICE = "oda.suggest.v1.ChatHostService";

/** A host method's client span, named as the RPC (`oda.suggest.v1.ChatHostService/<Method>`). */
function spanSpec(method: string): ClientSpanSpec {
  return {
    name: `${SERVICE}/${method}`,
    options: {
      kind: SpanKind.CLIENT,
      attributes: { "rpc.system": "grpc", "rpc.service": SERVICE, "rpc.method": method },
    },
  };
}

/**
 * The chat host with a client span around each of its three calls, a child of the
 * active RPC span. The span is active while the call runs, so the embedded host's Redis
 * scripts nest under it, and a remote host's client sends it on as `traceparent`
 * (server/host/chat-host.ts), making the host's own server span its child
 * (test/pipeline/tracing.test.ts). Inert without an OpenTelemetry SDK.
 */
export function traceChatHost(host: ChatHost): ChatHost {
  const getSession = spanSpec("GetSession");
  const createChat = spanSpec("CreateChat");
  const postMessage = spanSpec("PostMessage");
  return {
    getSession: (request) => inClientSpan(getSession, () => host.getSession(request)),
    createChat: (request) => inClientSpan(createChat, () => host.createChat(request)),
    postMessage: (request) => inClientSpan(postMessage, () => host.postMessage(request)),
  };
}
