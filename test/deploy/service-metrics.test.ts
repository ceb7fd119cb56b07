import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { SuggestServer } from "../../server/server.js";
import { startLockKey } from "../../server/store/keys.js";
import {
  grpcClients,
  putSession,
  redisClient,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { offerOne } from "../support/suggest.js";

// The two series the deployment's alerts read beyond the calls' own: whether the
// instance is ready, and the start locks a waiter had to take over from a silent holder.
let server: SuggestServer;
let redis: RedisClient;
beforeAll(async () => {
  server = await startTestServer();
  redis = redisClient();
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

/** The value of one unlabelled series on /metrics. */
async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} on /metrics:\n${text}`);
  return Number(line.slice(name.length + 1));
}

test("a Start that waits out a holder that never answers counts one lapsed start lock", async () => {
  const clients = grpcClients(server.url);
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  const offer = await offerOne(clients, sessionId);
  expect(await metric("suggest_start_lock_lapses_total")).toBe(0);

  // A holder that died: its lock is there, nobody renews it, nobody will announce a result.
  await redis.set(startLockKey(sessionId, offer.id), "a-dead-holder", "PX", 2_000);
  const started = await clients.suggestions.startSuggestion({ sessionId, suggestionId: offer.id });

  expect(started.suggestion?.state).toBe(SuggestionState.STARTED);
  expect(await metric("suggest_start_lock_lapses_total")).toBe(1);
  // An uncontended Start takes the lock at once: nothing more is counted.
  const second = await offerOne(clients, sessionId);
  await clients.suggestions.startSuggestion({ sessionId, suggestionId: second.id });
  expect(await metric("suggest_start_lock_lapses_total")).toBe(1);
});

test("suggest_ready is 1 while the instance is ready and 0 once it drains", async () => {
  expect(await metric("suggest_ready")).toBe(1);
  server.readiness.drain();
  expect(await metric("suggest_ready")).toBe(0);
});
