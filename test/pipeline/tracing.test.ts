import { randomBytes } from "node:crypto";
import { SpanKind } from "@opentelemetry/api";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestServer } from "../../server/server.js";
import { grpcClients, putSession, startTestServer, uniqueId } from "../support/harness.js";
import { offerOne } from "../support/suggest.js";

// This file's worker registers an SDK with an in-memory exporter, as main.ts registers
// the OTLP one when OTEL_EXPORTER_OTLP_ENDPOINT is set: W3C propagation and an
// AsyncLocalStorage context manager.
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();

const START = "oda.suggest.v1.SuggestionService/StartSuggestion";
const HOST = "oda.suggest.v1.ChatHostService";

let fast: SuggestServer;
let connectNode: SuggestServer;
let remote: SuggestServer;
beforeAll(async () => {
  [fast, connectNode] = await Promise.all([
    startTestServer(),
    startTestServer(undefined, { grpcFastPath: false }),
  ]);
  // A service whose chat host is remote: `fast`, reached over gRPC.
  remote = await startTestServer(undefined, { chatHostUrl: fast.url });
});
afterAll(async () => {
  await Promise.all([remote.close(), fast.close(), connectNode.close()]);
  await provider.shutdown();
});

/** A caller's W3C trace context: a fresh trace id and the id of its own span. */
function callerContext() {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** Offers on `server`'s host and starts it with the caller's traceparent; answers the trace. */
async function tracedStart(server: SuggestServer, hostUrl = server.url) {
  const clients = grpcClients(server.url);
  const sessionId = uniqueId();
  await putSession(grpcClients(hostUrl), { sessionId });
  const { id } = await offerOne(clients, sessionId);
  const caller = callerContext();
  await clients.suggestions.startSuggestion(
    { sessionId, suggestionId: id },
    { headers: { traceparent: caller.traceparent } },
  );
  const spans = () =>
    exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === caller.traceId);
  await vi.waitFor(() => expect(spans().map((s) => s.name)).toContain(START));
  return { caller, spans: spans() };
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const only = (spans: ReadableSpan[], name: string, kind: SpanKind) => {
  const found = spans.filter((s) => s.name === name && s.kind === kind);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0] as ReadableSpan;
};

describe("one Start is one trace: the caller's, the RPC span, the host and Redis spans under it", () => {
  test.each([
    ["the gRPC fast path", () => fast],
    ["connect-node (GRPC_FAST_PATH=0)", () => connectNode],
  ])("%s", async (_, server) => {
    const { caller, spans } = await tracedStart(server());
    const rpc = only(spans, START, SpanKind.SERVER);
    expect(parentOf(rpc)).toBe(caller.spanId);
    expect(rpc.attributes["rpc.grpc.status_code"]).toBe(0);

    // The two host calls, children of the RPC span. The embedded host's session record
    // is read in the Start's first script (beginStart), so there is no GetSession call.
    const createChat = only(spans, `${HOST}/CreateChat`, SpanKind.CLIENT);
    const postMessage = only(spans, `${HOST}/PostMessage`, SpanKind.CLIENT);
    for (const host of [createChat, postMessage]) {
      expect(parentOf(host)).toBe(rpc.spanContext().spanId);
    }
    // The embedded host's scripts under its calls; the suggestion's steps under the RPC.
    const script = (name: string) => only(spans, `redis ${name}`, SpanKind.CLIENT);
    expect(parentOf(script("createChat"))).toBe(createChat.spanContext().spanId);
    expect(parentOf(script("postMessage"))).toBe(postMessage.spanContext().spanId);
    expect(parentOf(script("beginStart"))).toBe(rpc.spanContext().spanId);
    expect(parentOf(script("announce"))).toBe(rpc.spanContext().spanId);
    expect(script("createChat").attributes["db.system.name"]).toBe("redis");

    // Nothing else in the trace, and every span of it under the RPC span.
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    for (const span of spans) {
      let up: ReadableSpan | undefined = span;
      while (up !== undefined && up !== rpc) up = byId.get(parentOf(up) ?? "");
      expect(up, span.name).toBe(rpc);
    }
    // The session, the suggestion and the lock are one script (beginStart); the
    // settlement, its read and the lock's release another (settleStart).
    expect(spans.map((s) => s.name).sort()).toEqual([
      `${HOST}/CreateChat`,
      `${HOST}/PostMessage`,
      START,
      // The chat is announced in its workspace's inbox before the settlement.
      "redis announce",
      "redis beginStart",
      "redis createChat",
      "redis postMessage",
      // Once: the first script read the offer, so its workspace is known (the guess of
      // suggestion-store.ts `announcedSettle`), and the announcement comes first.
      "redis settleStart",
    ]);
  });

  test("a remote chat host gets the trace context: its server spans are the host calls' children", async () => {
    const { caller, spans } = await tracedStart(remote, fast.url);
    const rpc = only(spans, START, SpanKind.SERVER);
    expect(parentOf(rpc)).toBe(caller.spanId);
    for (const method of ["GetSession", "CreateChat", "PostMessage"]) {
      const client = only(spans, `${HOST}/${method}`, SpanKind.CLIENT);
      expect(parentOf(client)).toBe(rpc.spanContext().spanId);
      const server = only(spans, `${HOST}/${method}`, SpanKind.SERVER);
      expect(parentOf(server)).toBe(client.spanContext().spanId);
    }
  });
});

test("a call without a traceparent starts a trace of its own", async () => {
  const clients = grpcClients(fast.url);
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  exporter.reset();
  await offerOne(clients, sessionId);
  const rpc = exporter
    .getFinishedSpans()
    .find((s) => s.name === "oda.suggest.v1.SuggestionService/SuggestTask");
  expect(rpc?.parentSpanContext).toBeUndefined();
  // The host's session is asked first (it names the workspace), then the offer's script.
  const offer = exporter.getFinishedSpans().find((s) => s.name === "redis offer");
  expect(offer?.spanContext().traceId).toBe(rpc?.spanContext().traceId);
  expect(parentOf(offer as ReadableSpan)).toBe(rpc?.spanContext().spanId);
});

test.each([
  ["the gRPC fast path", () => fast],
  ["connect-node", () => connectNode],
])(
  "a watch stream on %s is one server span, ended CANCELLED when the client leaves",
  async (_, server) => {
    const clients = grpcClients(server().url);
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    const caller = callerContext();
    const leave = new AbortController();
    const stream = clients.suggestions.watchSuggestions(
      { sessionId },
      { headers: { traceparent: caller.traceparent }, signal: leave.signal },
    );
    const first = await stream[Symbol.asyncIterator]().next();
    expect(first.done).toBe(false);
    leave.abort();
    const watchSpan = () =>
      exporter
        .getFinishedSpans()
        .find(
          (s) =>
            s.spanContext().traceId === caller.traceId &&
            s.name === "oda.suggest.v1.SuggestionService/WatchSuggestions",
        );
    await vi.waitFor(() => expect(watchSpan()).toBeDefined());
    expect(parentOf(watchSpan() as ReadableSpan)).toBe(caller.spanId);
    expect(watchSpan()?.attributes["rpc.grpc.status_code"]).toBe(1);
  },
);

test("no span holds a chat's text: offers, refusals, settlements, a Start and an erasure", async () => {
  const clients = grpcClients(fast.url);
  const sessionId = uniqueId();
  const marker = `m${randomBytes(8).toString("hex")}`;
  await putSession(clients, { sessionId });
  exporter.reset();
  const text = { title: `T ${marker}`, tldr: `L ${marker}`, brief: `B ${marker}` };
  const context = { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL };
  const offered = await clients.suggestions.suggestTask({ context, args: text });
  const suggestionId = offered.suggestion?.id ?? "";
  // Refused with the title in its message: a client's error, not the span's.
  await clients.suggestions
    .withdrawSuggestion({ context, args: { title: `X ${marker}`, reason: `R ${marker}` } })
    .catch(() => undefined);
  await clients.suggestions.dismissSuggestion({ sessionId, suggestionId });
  await clients.suggestions.restoreSuggestion({ sessionId, suggestionId });
  await clients.suggestions.startSuggestion({ sessionId, suggestionId });
  await clients.suggestions.deleteSuggestions({ sessionId });
  const seen = exporter
    .getFinishedSpans()
    .map((s) =>
      JSON.stringify([s.name, s.attributes, s.events, s.status, s.links, s.resource.attributes]),
    );
  expect(seen.length).toBeGreaterThan(0);
  expect(seen.filter((s) => s.includes(marker))).toEqual([]);
});
