import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import {
  AgentRole,
  createLocalHostClient,
  createSuggestionClient,
  isRetryableFailure,
  isRetrySafe,
  LocalHostService,
  retryInterceptor,
  SuggestionService,
} from "../../sdk/src/node.js";
import { type FlakyProxy, startFlakyProxy } from "../support/flaky-proxy.js";
import { connectErrorOf, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { offeredRecords } from "../support/suggest.js";

/*
 * The SDK's retries (sdk/src/retry.ts): what connect-node reports for each failure a
 * restart or a proxy causes, which calls are retried, how often, and never past the
 * deadline. The calls go to the real service through a proxy that counts them
 * (test/support/flaky-proxy.ts), and the records in Redis say what was applied.
 */

const SUGGEST_TASK = "/oda.suggest.v1.SuggestionService/SuggestTask";
const LIST = "/oda.suggest.v1.SuggestionService/ListSuggestions";
const FAST = { initialBackoffMs: 5, maxBackoffMs: 20 };

/** A raw HTTP/2 server that fails every call one way, counting sessions and streams. */
async function failingServer(
  fail: (stream: http2.ServerHttp2Stream, session: http2.ServerHttp2Session) => void,
) {
  const server = http2.createServer();
  let streams = 0;
  let sessions = 0;
  const open = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions++;
    open.add(session);
    session.on("error", () => {});
  });
  server.on("stream", (stream) => {
    streams++;
    stream.on("error", () => {});
    if (stream.session) fail(stream, stream.session as http2.ServerHttp2Session);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    streams: () => streams,
    sessions: () => sessions,
    close: () => {
      for (const session of open) session.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("what connect-node reports for a call that a restart or a proxy breaks", () => {
  const refusedByGoaway = (_: http2.ServerHttp2Stream, session: http2.ServerHttp2Session) =>
    session.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
  const cases = [
    [
      "RST_STREAM(REFUSED_STREAM)",
      (s: http2.ServerHttp2Stream) => s.close(http2.constants.NGHTTP2_REFUSED_STREAM),
      Code.Internal,
      "Stream closed with error code NGHTTP2_REFUSED_STREAM",
    ],
    [
      "RST_STREAM(INTERNAL_ERROR), as a proxy resets a stream its server dropped",
      (s: http2.ServerHttp2Stream) => s.close(http2.constants.NGHTTP2_INTERNAL_ERROR),
      Code.Internal,
      "Stream closed with error code NGHTTP2_INTERNAL_ERROR",
    ],
    ...[502, 503, 504].map(
      (status) =>
        [
          `a proxy's HTTP ${status}`,
          (s: http2.ServerHttp2Stream) => {
            s.respond({ ":status": status, "content-type": "text/html" });
            s.end("<html>no server</html>");
          },
          Code.Unavailable,
          `HTTP ${status}`,
        ] as const,
    ),
    [
      "headers, then the stream ends without trailers",
      (s: http2.ServerHttp2Stream) => {
        s.respond({ ":status": 200, "content-type": "application/grpc" });
        s.end();
      },
      Code.Internal,
      "protocol error: missing status",
    ],
  ] as const;

  test.each(cases)("%s: code and message, retryable", async (_name, fail, code, message) => {
    const server = await failingServer(fail);
    try {
      const client = createClient(SuggestionService, createGrpcTransport({ baseUrl: server.url }));
      const err = await connectErrorOf(client.listSuggestions({ sessionId: "s-1" }));
      expect([Code[err.code], err.rawMessage]).toEqual([Code[code], message]);
      expect(isRetryableFailure(err)).toBe(true);
    } finally {
      await server.close();
    }
  });

  test("a stream sent after a GOAWAY that excludes it: INTERNAL REFUSED_STREAM, retryable", async () => {
    // The GOAWAY comes first on the connection: the client's own HTTP/2 refuses the stream.
    const server = await failingServer(() => {});
    const front = http2.createServer();
    const fronted = new Set<http2.ServerHttp2Session>();
    front.on("session", (session) => {
      fronted.add(session);
      session.on("error", () => {});
      refusedByGoaway(undefined as never, session);
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = front.address() as AddressInfo;
      const client = createClient(
        SuggestionService,
        createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }),
      );
      const err = await connectErrorOf(client.listSuggestions({ sessionId: "s-1" }));
      expect([Code[err.code], err.rawMessage]).toEqual([
        "Internal",
        "Stream closed with error code NGHTTP2_REFUSED_STREAM",
      ]);
      expect(isRetryableFailure(err)).toBe(true);
    } finally {
      for (const session of fronted) session.destroy();
      await new Promise<void>((resolve) => front.close(() => resolve()));
      await server.close();
    }
  });

  test("a connection closed under the call: CANCELED, retryable", async () => {
    const server = await failingServer((_stream, session) => session.destroy());
    try {
      const client = createClient(SuggestionService, createGrpcTransport({ baseUrl: server.url }));
      const err = await connectErrorOf(client.listSuggestions({ sessionId: "s-1" }));
      expect([Code[err.code], err.rawMessage]).toEqual([
        "Canceled",
        "http/2 stream closed with error code CANCEL (0x8)",
      ]);
      expect(isRetryableFailure(err)).toBe(true);
    } finally {
      await server.close();
    }
  });

  test("an INTERNAL a handler answered is not retryable, nor is any other status", async () => {
    const server = await failingServer((s) =>
      s.respond(
        {
          ":status": 200,
          "content-type": "application/grpc",
          "grpc-status": String(Code.Internal),
          "grpc-message": "the handler failed",
        },
        { endStream: true },
      ),
    );
    try {
      const client = createSuggestionClient({ baseUrl: server.url, retry: FAST });
      const err = await connectErrorOf(client.listSuggestions({ sessionId: "s-1" }));
      expect([Code[err.code], err.rawMessage]).toEqual(["Internal", "the handler failed"]);
      expect(server.streams()).toBe(1);
      for (const code of [Code.InvalidArgument, Code.DeadlineExceeded, Code.ResourceExhausted]) {
        expect(isRetryableFailure(new ConnectError("no", code))).toBe(false);
      }
      expect(isRetryableFailure(new ConnectError("no", Code.Unavailable))).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe("which calls are retry-safe", () => {
  const { method } = SuggestionService;
  const context = { sessionId: "s", turnId: "t", role: AgentRole.TOP_LEVEL };
  test.each([
    ["listSuggestions", {}, true],
    ["getSuggestion", {}, true],
    ["listSettlements", {}, true],
    ["listWorkspaceSuggestions", {}, true],
    ["deleteSuggestions", {}, true],
    ["startSuggestion", {}, true],
    ["draftSuggestion", {}, true],
    ["dismissSuggestion", {}, true],
    ["restoreSuggestion", {}, true],
    ["suggestTask", { context: { ...context, toolCallId: "call-1" } }, true],
    ["suggestTask", { context }, false],
    ["suggestTask", {}, false],
    ["withdrawSuggestion", { context: { ...context, toolCallId: "call-1" } }, true],
    ["withdrawSuggestion", { context }, false],
  ] as const)("%s %j: %s", (name, message, safe) => {
    expect(isRetrySafe(method[name], { $typeName: "x", ...message })).toBe(safe);
  });

  test("the embedded host's PutSession and GetChat are, CreateGoal is not", () => {
    const local = LocalHostService.method;
    expect(isRetrySafe(local.putSession, { $typeName: "x" })).toBe(true);
    expect(isRetrySafe(local.getChat, { $typeName: "x" })).toBe(true);
    expect(isRetrySafe(local.createGoal, { $typeName: "x" })).toBe(false);
  });
});

describe("retries through a proxy in front of the real service", () => {
  const t = useTestServer();
  let proxy: FlakyProxy;
  beforeAll(async () => {
    proxy = await startFlakyProxy(t.url);
  });
  afterAll(async () => {
    await proxy.close();
  });
  afterEach(() => {
    proxy.mode = "pass";
    vi.restoreAllMocks();
  });

  async function chat(): Promise<string> {
    const sessionId = uniqueId("retry");
    await createLocalHostClient({ baseUrl: t.url }).putSession({
      session: { sessionId, workspaceId: "ws-1" },
    });
    return sessionId;
  }
  const args = { title: "Fix the flaky upload", tldr: "It drops", brief: "Retry it" };

  test("a SuggestTask without tool_call_id whose answer was lost is sent once: one offer", async () => {
    const sessionId = await chat();
    const client = createSuggestionClient({ baseUrl: proxy.url, retry: FAST });
    proxy.mode = "reset-after-answer";
    const before = proxy.received(SUGGEST_TASK);
    const err = await connectErrorOf(
      client.suggestTask({ context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL }, args }),
    );
    expect(err.code).toBe(Code.Internal);
    expect(isRetryableFailure(err)).toBe(true); // the failure is retryable; the call is not
    expect(proxy.received(SUGGEST_TASK) - before).toBe(1);
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test("nor after UNAVAILABLE, on any transport of the Node entry", async () => {
    const sessionId = await chat();
    proxy.mode = "http-503";
    for (const protocol of ["grpc", "connect", "grpc-web"] as const) {
      const client = createSuggestionClient({ baseUrl: proxy.url, protocol, retry: FAST });
      const before = proxy.received(SUGGEST_TASK);
      const err = await connectErrorOf(
        client.suggestTask({
          context: { sessionId, turnId: `t-${protocol}`, role: AgentRole.TOP_LEVEL },
          args,
        }),
      );
      expect(err.code).toBe(Code.Unavailable);
      expect(proxy.received(SUGGEST_TASK) - before).toBe(1);
    }
  });

  test("a SuggestTask with tool_call_id is retried and records one offer", async () => {
    const sessionId = await chat();
    const client = createSuggestionClient({ baseUrl: proxy.url, retry: FAST });
    proxy.mode = "reset-after-answer";
    const before = proxy.received(SUGGEST_TASK);
    const context = { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL, toolCallId: "call-1" };
    const err = await connectErrorOf(client.suggestTask({ context, args }));
    expect(err.code).toBe(Code.Internal);
    expect(proxy.received(SUGGEST_TASK) - before).toBe(5); // DEFAULT_RETRY_POLICY.maxAttempts
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(1);
    proxy.mode = "pass";
    const { result } = await client.suggestTask({ context, args });
    expect(result).toBe(
      'Suggested "Fix the flaky upload". The user decides whether to start it; do not start it yourself.',
    );
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test("a read refused by the proxy succeeds once it passes again", async () => {
    const sessionId = await chat();
    const client = createSuggestionClient({
      baseUrl: proxy.url,
      retry: { initialBackoffMs: 200, maxBackoffMs: 200, maxAttempts: 10 },
    });
    proxy.mode = "refuse";
    const before = proxy.received(LIST);
    const call = client.listSuggestions({ sessionId });
    await vi.waitUntil(() => proxy.received(LIST) - before >= 2, { timeout: 10_000 });
    proxy.mode = "pass";
    const { open } = await call;
    expect(open).toEqual([]);
  });

  test("retry: false sends a read once", async () => {
    const client = createSuggestionClient({ baseUrl: proxy.url, retry: false });
    proxy.mode = "refuse";
    const before = proxy.received(LIST);
    const err = await connectErrorOf(client.listSuggestions({ sessionId: "s-1" }));
    expect(err.rawMessage).toBe("Stream closed with error code NGHTTP2_REFUSED_STREAM");
    expect(proxy.received(LIST) - before).toBe(1);
  });

  test("a retry never outlives the deadline: a wait past it is not begun", async () => {
    // Every wait drawn at its ceiling: 400 ms, then 800 ms. With 1 s to live the call is
    // tried at once and after 400 ms; the next wait would end past the deadline, so the
    // call fails then with the last failure, not DEADLINE_EXCEEDED after a third try.
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const client = createSuggestionClient({
      baseUrl: proxy.url,
      retry: { initialBackoffMs: 400, maxBackoffMs: 10_000, maxAttempts: 10 },
    });
    proxy.mode = "refuse";
    const first = proxy.headers.length;
    const err = await connectErrorOf(
      client.listSuggestions({ sessionId: "s-1" }, { timeoutMs: 1_000 }),
    );
    expect(err.code).toBe(Code.Internal);
    const attempts = proxy.headers
      .slice(first)
      .map((h) => Number.parseInt(String(h["grpc-timeout"]), 10));
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    expect(attempts.length).toBeLessThanOrEqual(2);
    // Each attempt asks the server for the time left, never more than the call's.
    for (const ms of attempts) expect(ms).toBeLessThanOrEqual(1_000);
    if (attempts.length === 2) expect(attempts[1]).toBeLessThanOrEqual(1_000 - 390);
  });

  test("the default unary deadline of the Node entry bounds the retries too", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const client = createSuggestionClient({
      baseUrl: proxy.url,
      defaultTimeoutMs: 300,
      retry: { initialBackoffMs: 1_000, maxAttempts: 10 },
    });
    proxy.mode = "refuse";
    const first = proxy.headers.length;
    const err = await connectErrorOf(client.listSuggestions({ sessionId: "s-1" }));
    expect(err.code).toBe(Code.Internal);
    expect(proxy.headers.length - first).toBe(1);
    expect(proxy.headers[first]?.["grpc-timeout"]).toMatch(/^\d+m$/);
    expect(Number.parseInt(String(proxy.headers[first]?.["grpc-timeout"]), 10)).toBeLessThanOrEqual(
      300,
    );
  });

  test("a caller's abort during the backoff ends the call CANCELED, with no further try", async () => {
    const client = createSuggestionClient({
      baseUrl: proxy.url,
      defaultTimeoutMs: 0,
      retry: { initialBackoffMs: 60_000, maxBackoffMs: 60_000 },
    });
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    proxy.mode = "refuse";
    const before = proxy.received(LIST);
    const controller = new AbortController();
    const call = client.listSuggestions({ sessionId: "s-1" }, { signal: controller.signal });
    await vi.waitUntil(() => proxy.received(LIST) - before === 1);
    controller.abort();
    const err = await connectErrorOf(call);
    expect(err.code).toBe(Code.Canceled);
    expect(proxy.received(LIST) - before).toBe(1);
  });

  test("retryInterceptor among a connect-es transport's own interceptors reads the timeout header", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const transport = createConnectTransport({
      baseUrl: proxy.url,
      httpVersion: "2",
      interceptors: [retryInterceptor({ initialBackoffMs: 400, maxAttempts: 10 })],
    });
    const client = createClient(SuggestionService, transport);
    proxy.mode = "http-503";
    const first = proxy.headers.length;
    const err = await connectErrorOf(
      client.listSuggestions({ sessionId: "s-1" }, { timeoutMs: 1_000 }),
    );
    expect(err.code).toBe(Code.Unavailable);
    const timeouts = proxy.headers.slice(first).map((h) => Number(h["connect-timeout-ms"]));
    expect(timeouts.length).toBeGreaterThanOrEqual(1);
    expect(timeouts.length).toBeLessThanOrEqual(2);
    if (timeouts.length === 2) expect(timeouts[1]).toBeLessThanOrEqual(1_000 - 390);
  });

  test("the Node entry names the SDK and its version in user-agent", async () => {
    const client = createSuggestionClient({ baseUrl: proxy.url });
    const first = proxy.headers.length;
    await client.listSuggestions({ sessionId: "s-1" });
    expect(proxy.headers[first]?.["user-agent"]).toBe("oda-suggest-task-node/1.0.0");
  });
});

test("SDK_VERSION is the package's version", async () => {
  const { SDK_VERSION } = await import("../../sdk/src/node.js");
  const { readFileSync } = await import("node:fs");
  const pkg = JSON.parse(readFileSync(new URL("../../sdk/package.json", import.meta.url), "utf8"));
  expect(SDK_VERSION).toBe(pkg.version);
});
