import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { context, propagation, type TextMapSetter } from "@opentelemetry/api";
import {
  ChatHostService,
  type CreateChatRequestSchema,
  type CreateChatResponse,
  type GetSessionResponse,
  type PostMessageRequestSchema,
  type PostMessageResponse,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";

/**
 * The chat host as the service uses it: the three RPCs of `ChatHostService`. A Connect
 * client of a remote host satisfies it, and so does the embedded host, called directly
 * without a transport in between.
 */
export interface ChatHost {
  /** NOT_FOUND when the host knows no such session. */
  getSession(request: { sessionId: string }): Promise<GetSessionResponse>;
  /** The same idempotency key always answers the same chat. */
  createChat(
    request: MessageInitShape<typeof CreateChatRequestSchema>,
  ): Promise<CreateChatResponse>;
  /** The same idempotency key posts once. */
  postMessage(
    request: MessageInitShape<typeof PostMessageRequestSchema>,
  ): Promise<PostMessageResponse>;
}

const headerSetter: TextMapSetter<Headers> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

/**
 * Sends the active trace context (W3C `traceparent`, with the SDK's default propagator)
 * to the remote host, so that its spans continue the call's trace. A no-op without an
 * OpenTelemetry SDK (test/pipeline/tracing.test.ts).
 */
const traceContext: Interceptor = (next) => (req) => {
  propagation.inject(context.active(), req.header, headerSetter);
  return next(req);
};

/**
 * A client of a remote `ChatHostService` over gRPC (`CHAT_HOST_URL`). Every call has a
 * deadline (`timeoutMs`), so a host that hangs answers DEADLINE_EXCEEDED, which the
 * handlers report as UNAVAILABLE (`dependencyError`), instead of holding the call open.
 * Each call carries the caller's trace context.
 */
export function createRemoteChatHost(
  baseUrl: string,
  options: { readonly timeoutMs?: number; readonly token?: string | undefined } = {},
): Client<typeof ChatHostService> {
  const { token } = options;
  const bearer: Interceptor = (next) => (req) => {
    if (token !== undefined) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  return createClient(
    ChatHostService,
    createGrpcTransport({
      baseUrl,
      defaultTimeoutMs: options.timeoutMs ?? 10_000,
      interceptors: [bearer, traceContext],
    }),
  );
}
