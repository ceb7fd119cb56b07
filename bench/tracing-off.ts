/**
 * What tracing costs when it is off (no OpenTelemetry SDK registered, as the service runs
 * without OTEL_EXPORTER_OTLP_ENDPOINT): the per-call CPU of the three wrappers a
 * SuggestTask goes through (the RPC's server span, the chat host's GetSession span, the
 * `offer` script's span) around handlers that do nothing, against the same handlers
 * unwrapped. In process, so the figure is the wrappers' own cost, free of network and
 * Redis noise; compare it with the service's CPU per SuggestTask in the table.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { trace } from "@opentelemetry/api";
import type { GetSessionResponse } from "../gen/oda/suggest/v1/chat_host_pb.js";
import {
  SuggestionService,
  type SuggestTaskRequest,
  SuggestTaskRequestSchema,
  SuggestTaskResponseSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { ChatHost } from "../server/host/chat-host.js";
import { traceChatHost } from "../server/host/traced-host.js";
import { traceService } from "../server/pipeline/tracing.js";
import { inClientSpan, scriptSpan } from "../server/store/script-spans.js";

/** The figures: ns per call, unwrapped and wrapped, and whether any span recorded. */
export interface TracingOffResult {
  readonly calls: number;
  readonly plainNsPerCall: number;
  readonly tracedNsPerCall: number;
  readonly overheadNsPerCall: number;
  readonly headersRead: number;
}

type Call = (request: SuggestTaskRequest, context: HandlerContext) => Promise<unknown>;

/** Builds one SuggestTask path: handler -> host.getSession -> redis.offer, wrapped or not. */
function path(traced: boolean): Call {
  const session = { session: undefined } as unknown as GetSessionResponse;
  const bareHost = {
    getSession: () => Promise.resolve(session),
    createChat: () => Promise.reject(new Error("unused")),
    postMessage: () => Promise.reject(new Error("unused")),
  } satisfies ChatHost;
  const bareOffer = (..._args: unknown[]) => Promise.resolve([1]);
  const span = scriptSpan("offer");
  const redis = {
    offer: traced
      ? (...args: unknown[]) => inClientSpan(span, () => bareOffer(...args))
      : bareOffer,
  };
  const host = traced ? traceChatHost(bareHost) : bareHost;
  const response = create(SuggestTaskResponseSchema, { result: "ok" });
  const impl = {
    async suggestTask(request: SuggestTaskRequest) {
      await host.getSession({ sessionId: request.context?.sessionId ?? "" });
      await redis.offer("log", "projection", "changes");
      return response;
    },
  };
  const served = traced ? traceService(SuggestionService, impl as never) : impl;
  return served.suggestTask as Call;
}

async function timeIt(call: Call, calls: number, context: HandlerContext): Promise<number> {
  const request = create(SuggestTaskRequestSchema, { context: { sessionId: "s" } });
  for (let i = 0; i < 20_000; i++) await call(request, context); // warm-up
  const began = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await call(request, context);
  return Number(process.hrtime.bigint() - began) / calls;
}

/** Measures the wrappers with no SDK registered; best of five rounds each, alternating. */
export async function measureTracingOff(calls = 200_000): Promise<TracingOffResult> {
  if (trace.getTracer("probe").startSpan("probe").isRecording()) {
    throw new Error("an OpenTelemetry SDK is registered; this measures tracing off");
  }
  let headersRead = 0;
  const context = {
    get requestHeader() {
      headersRead++;
      return new Headers();
    },
    signal: new AbortController().signal,
  } as unknown as HandlerContext;
  const plain = path(false);
  const traced = path(true);
  let plainNs = Number.POSITIVE_INFINITY;
  let tracedNs = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    plainNs = Math.min(plainNs, await timeIt(plain, calls, context));
    tracedNs = Math.min(tracedNs, await timeIt(traced, calls, context));
  }
  return {
    calls,
    plainNsPerCall: Math.round(plainNs),
    tracedNsPerCall: Math.round(tracedNs),
    overheadNsPerCall: Math.round(tracedNs - plainNs),
    headersRead,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await measureTracingOff(), null, 2));
}
