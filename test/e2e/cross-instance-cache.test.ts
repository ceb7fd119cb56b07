import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { sessionKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { type Clients, eventually, putSession, tempDir, uniqueId } from "../support/harness.js";
import { foldLog } from "../support/model/fold.js";
import { useTestServer } from "../support/server-fixture.js";
import { startTestRedis } from "../support/store-server.js";
import { offerOne } from "../support/suggest.js";

/*
 * Issue 16: every instance keeps the lists it last read of a chat, by the version of its
 * log (store/lists-cache.ts), and asks Redis only whether that version is still the
 * log's. This proves no instance ever answers an older version: whatever changes the
 * log (the other instance, a writer by hand, XDEL, the whole log deleted, a restarted
 * Redis, a deleted projection), the next List and Get of every instance is the fold of
 * the log as it stands.
 */

// A redis-server of this file's own, which the restart test stops and starts again on
// the same port and data folder; registered first, so it stops after both servers.
const data = tempDir("cache-redis");
let redis: RedisServerProcess;
beforeAll(async () => {
  redis = await startTestRedis({ dir: data.dir });
});
afterAll(async () => {
  await redis?.stop();
  data.remove();
});
const a = useTestServer({ redisUrl: () => redis.url });
const b = useTestServer({ redisUrl: () => redis.url });

type View = [string, string][];
const viewOf = (open: { id: string; state: SuggestionState }[], settled: typeof open): View =>
  [...open, ...settled].map((s) => [s.id, SuggestionState[s.state]]);

/** The lists as the fold of the whole log gives them now. */
async function truth(sessionId: string): Promise<View> {
  const store = new SuggestionStore(a.redis);
  const lists = foldLog(sessionId, await store.readLog(sessionId));
  return viewOf(lists.open, lists.settled);
}

/** What an instance answers: its List, and its Get of every suggestion the truth holds. */
async function answered(clients: Clients, sessionId: string): Promise<View> {
  const { open, settled } = await clients.suggestions.listSuggestions({ sessionId });
  const listed = viewOf(open, settled);
  for (const [id, state] of await truth(sessionId)) {
    const { suggestion } = await clients.suggestions.getSuggestion({ sessionId, suggestionId: id });
    expect([suggestion?.id, SuggestionState[suggestion?.state ?? 0]]).toEqual([id, state]);
  }
  return listed;
}

/** Both instances answer the log as it stands (each read twice: once held, once asked). */
async function expectBothCurrent(sessionId: string): Promise<void> {
  const expected = await truth(sessionId);
  for (const server of [a, b]) {
    expect(await answered(server.clients, sessionId)).toEqual(expected);
    expect(await answered(server.clients, sessionId)).toEqual(expected);
  }
}

test("a change through either instance, or by hand, is never missed by the other", async () => {
  const sessionId = uniqueId("cache");
  await putSession(a.clients, { sessionId });
  const first = await offerOne(a.clients, sessionId, "First");
  const second = await offerOne(b.clients, sessionId, "Second");
  await expectBothCurrent(sessionId);

  await b.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: first.id });
  await expectBothCurrent(sessionId);
  expect((await truth(sessionId))[1]).toEqual([first.id, "DISMISSED"]);

  await a.clients.suggestions.restoreSuggestion({ sessionId, suggestionId: first.id });
  await b.clients.suggestions.draftSuggestion({ sessionId, suggestionId: second.id });
  await expectBothCurrent(sessionId);

  // A writer by hand (another build, a tool): a settled record appended to the log.
  const { log, projection } = sessionKeys(sessionId);
  await a.redis.xadd(log, "*", "type", "settled", "id", first.id, "outcome", "dismissed");
  await expectBothCurrent(sessionId);
  expect((await truth(sessionId))[0]).toEqual([first.id, "DISMISSED"]);

  // A record in the middle of the log deleted (XDEL): the last id stays, the length
  // does not, and so the version changes: the draft is undone.
  const entries = await a.redis.xrange(log, "-", "+");
  const drafted = entries.find(([, f]) => f.includes("drafted") && f.includes(second.id));
  expect(drafted?.[0]).not.toBe(entries.at(-1)?.[0]);
  await a.redis.xdel(log, drafted?.[0] ?? "");
  await expectBothCurrent(sessionId);
  expect((await truth(sessionId)).find(([id]) => id === second.id)).toEqual([second.id, "OPEN"]);

  // The projection deleted: the held lists are still the log's; the next write rebuilds it.
  await a.redis.del(projection);
  await expectBothCurrent(sessionId);
  await b.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: first.id });
  await expectBothCurrent(sessionId);

  // The whole log deleted and offered to again: a new log, never the held one.
  await a.redis.del(log, projection);
  await expectBothCurrent(sessionId);
  expect(await truth(sessionId)).toEqual([]);
  const third = await offerOne(b.clients, sessionId, "Third");
  await expectBothCurrent(sessionId);
  expect(await truth(sessionId)).toEqual([[third.id, "OPEN"]]);
});

test("after a Redis restart both instances answer the log, and see the next change", async () => {
  const sessionId = uniqueId("cache");
  await putSession(a.clients, { sessionId });
  const first = await offerOne(a.clients, sessionId, "First");
  await offerOne(a.clients, sessionId, "Second");
  await expectBothCurrent(sessionId);

  await redis.stop();
  redis = await startTestRedis({ port: redis.port, dir: data.dir });
  await eventually(async () => {
    try {
      await a.clients.suggestions.listSuggestions({ sessionId });
      await b.clients.suggestions.listSuggestions({ sessionId });
      return true;
    } catch {
      return false;
    }
  }, 20_000);
  await expectBothCurrent(sessionId);
  await b.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: first.id });
  await expectBothCurrent(sessionId);
  expect((await truth(sessionId)).find(([id]) => id === first.id)).toEqual([first.id, "DISMISSED"]);
}, 40_000);
