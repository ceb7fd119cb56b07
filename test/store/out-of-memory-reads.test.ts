import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { foldSettlements } from "../../server/domain/settlements.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys, workspaceKeys } from "../../server/store/keys.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { uniqueId } from "../support/harness.js";
import { foldLog } from "../support/model/fold.js";
import { dumpRedis } from "../support/redis-dump.js";
import { useOwnRedis } from "../support/server-fixture.js";
import { storeOffer } from "../support/suggest.js";

/*
 * The store's reads on a Redis that is out of memory: answered from the logs alone,
 * writing nothing, where they would otherwise write caches back (a projection folded
 * anew, a pending chat of an inbox, an expired chat leaving its inbox).
 */

const own = useOwnRedis();
let redis: RedisClient;
beforeAll(() => {
  redis = createRedisClient(own.url);
});
afterAll(() => {
  redis.disconnect();
});

/** Runs `read` while the Redis holds more than its `maxmemory` (`noeviction`). */
async function outOfMemory<T>(read: () => Promise<T>): Promise<T> {
  const admin = redis as Redis;
  const used = Number(/^used_memory:(\d+)/m.exec(await admin.info("memory"))?.[1]);
  await admin.config("SET", "maxmemory", String(used - 256 * 1024));
  try {
    return await read();
  } finally {
    await admin.config("SET", "maxmemory", "0");
  }
}

test("a chat's lists, one suggestion and its settlements, its projection gone: the log's fold, the projection left gone", async () => {
  const store = new SuggestionStore(redis);
  const sessionId = uniqueId("oom");
  const ids = [await storeOffer(store, sessionId), await storeOffer(store, sessionId)];
  await store.settle(sessionId, ids[0] ?? "", "dismissed");
  await store.settle(sessionId, ids[0] ?? "", "restored");
  await store.settle(sessionId, ids[1] ?? "", "started", "chat-1");
  await redis.del(sessionKeys(sessionId).projection);
  const records = await store.readLog(sessionId);
  const fresh = new SuggestionStore(redis);
  const before = await dumpRedis(redis);
  const [lists, one, settlements, after] = await outOfMemory(async () => [
    await fresh.lists(sessionId),
    await fresh.suggestion(sessionId, ids[1] ?? ""),
    await fresh.settlements(sessionId, ""),
    await dumpRedis(redis),
  ]);
  expect(after).toEqual(before);
  expect(lists).toEqual(foldLog(sessionId, records));
  expect(one).toEqual(foldLog(sessionId, records).byId.get(ids[1] ?? ""));
  expect(settlements).toEqual(foldSettlements(sessionId, records));
  expect(settlements).toHaveLength(3);
});

test("an inbox with a pending chat and a chat that expired: the log's open offers, nothing written; the next read with memory writes the index", async () => {
  // Long enough for the first listing to find the chat on a loaded machine; the loop
  // below then waits for its keys to expire.
  const retentionMs = 2_000;
  const inbox = new WorkspaceInbox(redis, { retentionMs });
  const expiring = new SuggestionStore(redis, inbox, undefined, retentionMs);
  const lasting = new SuggestionStore(redis, new WorkspaceInbox(redis));
  const workspaceId = uniqueId("ws");
  const [gone, kept, pending] = [uniqueId(), uniqueId(), uniqueId()];
  await storeOffer(expiring, gone, workspaceId);
  const keptOffer = await storeOffer(lasting, kept, workspaceId);
  const pendingOffer = await storeOffer(lasting, pending, workspaceId);
  const keys = workspaceKeys(workspaceId);
  const listed = async () =>
    (await inbox.page(workspaceId, 50, "")).entries.map((e) => e.suggestion.id);
  // Written into the index by a read, then pending again, as after an announcement that
  // no append followed.
  expect(await listed()).toHaveLength(3);
  expect(await redis.hexists(keys.chats, `m:${gone}`)).toBe(1);
  await inbox.announce(workspaceId, pending);
  for (let i = 0; i < 500 && (await redis.exists(sessionKeys(gone).log)) === 1; i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(await redis.exists(sessionKeys(gone).log)).toBe(0);
  const before = await dumpRedis(redis);
  const [page, after] = await outOfMemory(async () => [await listed(), await dumpRedis(redis)]);
  expect(page.sort()).toEqual([keptOffer, pendingOffer].sort());
  expect(after).toEqual(before);
  expect(await redis.hexists(keys.chats, `m:${gone}`)).toBe(1);
  expect(await redis.smembers(keys.pending)).toEqual([pending]);
  // Memory back: the same page, the expired chat forgotten, the pending one written.
  expect((await listed()).sort()).toEqual([keptOffer, pendingOffer].sort());
  expect(await redis.hexists(keys.chats, `m:${gone}`)).toBe(0);
  expect(await redis.smembers(keys.pending)).toEqual([]);
});
