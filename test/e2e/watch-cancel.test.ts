import { createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { grpcJsClients, grpcJsStream } from "../support/grpc-js.js";
import { eventually, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";

const t = useTestServer();

/** The `suggest_watchers` gauge as /metrics serves it. */
async function watchersMetric(): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const line = /^suggest_watchers (\d+)$/m.exec(text);
  if (line === null) throw new Error("no suggest_watchers on /metrics");
  return Number(line[1]);
}

/** Waits for the server's watch count to reach `count`; a second is the bound for a cancel. */
async function watchersBecome(count: number, ms: number): Promise<void> {
  await eventually(async () => t.server.watchers() === count, ms);
}

test("a grpc-js client that cancels its watch (RST_STREAM) frees it on the server within a second", async () => {
  const clients = grpcJsClients(t.url);
  const before = t.server.watchers();
  const calls = [
    grpcJsStream(clients.suggestions, "WatchSuggestions", { session_id: uniqueId() }),
    grpcJsStream(clients.suggestions, "WatchWorkspaceSuggestions", {
      workspace_id: uniqueId("ws"),
      heartbeat_seconds: 30,
    }),
  ];
  for (const call of calls) {
    call.on("error", () => {});
    await new Promise((resolve) => call.once("data", resolve));
  }
  expect(t.server.watchers()).toBe(before + 2);
  expect(await watchersMetric()).toBe(before + 2);
  for (const call of calls) call.cancel();
  await watchersBecome(before, 1_000);
  expect(await watchersMetric()).toBe(before);
  clients.close();
});

test.each([
  ["gRPC over HTTP/2 (the fast path)", () => createGrpcTransport({ baseUrl: t.url })],
  [
    "gRPC-Web over HTTP/2 (connect-node)",
    () => createGrpcWebTransport({ baseUrl: t.url, httpVersion: "2" }),
  ],
  [
    "Connect over HTTP/1.1 (connect-node)",
    () => createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
  ],
])(
  "a connect-es client that aborts its watch over %s frees it on the server within a second",
  async (_, transport) => {
    const client = createClient(SuggestionService, transport());
    const before = t.server.watchers();
    const abort = new AbortController();
    let during = 0;
    const reading = (async () => {
      try {
        for await (const _m of client.watchSuggestions(
          { sessionId: uniqueId(), heartbeatSeconds: 30 },
          { signal: abort.signal },
        )) {
          during = t.server.watchers();
          abort.abort();
        }
      } catch {
        // The abort ends the loop with CANCELED: the caller's own doing.
      }
    })();
    await reading;
    expect(during).toBe(before + 1);
    await watchersBecome(before, 1_000);
    expect(t.server.watchers()).toBe(before);
  },
);
