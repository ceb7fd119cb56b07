import { expect, test } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";

const t = useTestServer();

test("an offer is recorded over gRPC on HTTP/2", async () => {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const res = await t.clients.suggestions.suggestTask({
    context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL, toolCallId: "c1" },
    args: { title: "Fix it", tldr: "Because", brief: "Do the thing" },
  });
  expect(res.result).toBe(
    'Suggested "Fix it". The user decides whether to start it; do not start it yourself.',
  );
});
