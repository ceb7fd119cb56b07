import { afterAll, beforeAll, expect, test } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestServer } from "../../server/server.js";
import {
  type Clients,
  grpcClients,
  putSession,
  startTestServer,
  uniqueId,
} from "../support/harness.js";

let server: SuggestServer;
let clients: Clients;
beforeAll(async () => {
  server = await startTestServer();
  clients = grpcClients(server.url);
});
afterAll(() => server.close());

test("an offer is recorded over gRPC on HTTP/2", async () => {
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  const res = await clients.suggestions.suggestTask({
    context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL, toolCallId: "c1" },
    args: { title: "Fix it", tldr: "Because", brief: "Do the thing" },
  });
  expect(res.result).toBe(
    'Suggested "Fix it". The user decides whether to start it; do not start it yourself.',
  );
});
