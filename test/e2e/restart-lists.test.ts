import { afterAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { ListSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import {
  grpcClients,
  ownRedis,
  putSession,
  redisClient,
  type ServiceProcess,
  spawnService,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { logRecords, watch } from "../support/lists.js";
import { startTestRedis } from "../support/store-server.js";
import { offerOne } from "../support/suggest.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

test("kill -9 of the service and of Redis keeps the lists and every acknowledged settlement", async () => {
  const first = await ownRedis();
  cleanups.push(() => first.remove());
  let redis: RedisServerProcess = first;
  cleanups.push(() => redis.kill());
  let service: ServiceProcess = await spawnService(first.url);
  cleanups.push(() => service.kill());
  let clients = grpcClients(service.url);

  // Five sessions with three offers each, settled in every way Draft, Dismiss and
  // Restore allow.
  const sessions: { sessionId: string; offers: string[] }[] = [];
  for (let i = 0; i < 5; i++) {
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    const offers: string[] = [];
    for (let j = 0; j < 3; j++) offers.push((await offerOne(clients, sessionId, `S${i} T${j}`)).id);
    sessions.push({ sessionId, offers });
  }
  for (const { sessionId, offers } of sessions) {
    const [a, b] = offers as [string, string, string];
    await clients.suggestions.dismissSuggestion({ sessionId, suggestionId: a });
    await clients.suggestions.draftSuggestion({ sessionId, suggestionId: b });
    await clients.suggestions.restoreSuggestion({ sessionId, suggestionId: a });
  }

  // A burst of settlements; each one acknowledged is recorded. Then both die at once.
  const acknowledged = new Map<string, SuggestionState>();
  await Promise.all(
    sessions.flatMap(({ sessionId, offers }) =>
      [offers[0], offers[2]].map(async (suggestionId, k) => {
        const call = k === 0 ? "dismissSuggestion" : "draftSuggestion";
        const res = await clients.suggestions[call]({
          sessionId,
          suggestionId: suggestionId ?? "",
        });
        acknowledged.set(`${sessionId}/${suggestionId}`, res.suggestion?.state ?? 0);
      }),
    ),
  );
  expect(acknowledged.size).toBe(10);
  const before = new Map<string, ListSuggestionsResponse>();
  for (const { sessionId } of sessions) {
    before.set(sessionId, await clients.suggestions.listSuggestions({ sessionId }));
  }
  await Promise.all([redis.kill(), service.kill("SIGKILL")]);

  redis = await startTestRedis({ dir: first.dir, port: first.port });
  service = await spawnService(redis.url);
  clients = grpcClients(service.url);
  for (const { sessionId, offers } of sessions) {
    const after = await clients.suggestions.listSuggestions({ sessionId });
    expect(after).toEqual(before.get(sessionId));
    for (const id of [offers[0], offers[2]]) {
      const { suggestion } = await clients.suggestions.getSuggestion({
        sessionId,
        suggestionId: id ?? "",
      });
      expect(suggestion?.state).toBe(acknowledged.get(`${sessionId}/${id}`));
    }
  }
  // The rebuilt service still decides from the same records: the dismissed one
  // restores (fewer than 3 open), the drafted one is not-open.
  const { sessionId, offers } = sessions[0] as { sessionId: string; offers: string[] };
  const restored = await clients.suggestions.restoreSuggestion({
    sessionId,
    suggestionId: offers[0] ?? "",
  });
  expect(restored.suggestion?.state).toBe(SuggestionState.OPEN);

  // Redis alone killed right after an acknowledgement, a few times over.
  for (let round = 0; round < 3; round++) {
    const suggestionId = offers[0] ?? "";
    const call = round % 2 === 0 ? "dismissSuggestion" : "restoreSuggestion";
    const res = await clients.suggestions[call]({ sessionId, suggestionId });
    await redis.kill();
    redis = await startTestRedis({ dir: first.dir, port: first.port });
    const reader = redisClient(redis.url);
    const log = await logRecords(reader, sessionId);
    reader.disconnect();
    expect(log.at(-1)).toMatchObject({
      type: "settled",
      id: suggestionId,
      outcome: round % 2 === 0 ? "dismissed" : "restored",
    });
    const { suggestion } = await retry(() =>
      clients.suggestions.getSuggestion({ sessionId, suggestionId }),
    );
    expect(suggestion).toEqual(res.suggestion);
  }
}, 60_000);

/** Retries a call while the service's Redis client reconnects. */
async function retry<T>(call: () => Promise<T>, attempts = 50): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await call();
    } catch (err) {
      if (i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

test("a watcher keeps watching across a kill -9 of Redis", async () => {
  const first = await ownRedis();
  cleanups.push(() => first.remove());
  let redis: RedisServerProcess = first;
  cleanups.push(() => redis.kill());
  const server = await startTestServer(first.url);
  cleanups.push(() => server.close());
  const clients = grpcClients(server.url);
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  const a = (await offerOne(clients, sessionId, "A")).id;
  const w = watch(clients, sessionId);
  await w.waitFor((m) => m.open.length === 1);

  await redis.kill();
  redis = await startTestRedis({ dir: first.dir, port: first.port });
  await retry(() => clients.suggestions.dismissSuggestion({ sessionId, suggestionId: a }));
  const seen = await w.waitFor((m) => m.settled[0]?.state === SuggestionState.DISMISSED);
  expect(seen.open).toEqual([]);
  w.cancel();
  await w.ended;
});
