import { Cluster } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { rebuildInboxes } from "../../server/store/inbox-rebuild.js";
import { workspaceKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { redisClient, uniqueId } from "../support/harness.js";

// The workspace inbox on the suite's Redis Cluster: chats on every primary, the index
// on its workspace's slot, rebuilt by SCAN over every primary.
let redis: RedisClient;
let store: SuggestionStore;
beforeAll(() => {
  redis = redisClient();
  store = new SuggestionStore(redis);
});
afterAll(() => redis.disconnect());

test("an inbox over chats of every primary reads, and rebuilds from the logs, the same", async () => {
  expect(redis).toBeInstanceOf(Cluster);
  const workspaceId = uniqueId("ws");
  const sessions = Array.from({ length: 24 }, () => uniqueId());
  await Promise.all(
    sessions.map(async (sessionId, c) => {
      for (let i = 0; i < 2; i++) {
        const offer = { id: `o${i}`, turnId: `t${i}`, toolCallId: "", title: "T", tldr: "R" };
        await store.offer(sessionId, { ...offer, brief: "B" }, false, workspaceId);
      }
      if (c % 4 === 0) await store.settle(sessionId, "o1", "drafted");
    }),
  );
  const slots = new Set(
    await Promise.all(sessions.map((s) => (redis as Cluster).cluster("KEYSLOT", `{${s}}`))),
  );
  expect(slots.size).toBeGreaterThan(1);
  const read = async () => {
    const page = await store.inbox.page(workspaceId, 500, "");
    return page.entries.map((e) => `${e.suggestion.sessionId}/${e.suggestion.id}`);
  };
  const before = await read();
  expect(before).toHaveLength(42);
  const k = workspaceKeys(workspaceId);
  await redis.del(k.offers, k.chats, k.pending, k.docs);
  expect(await read()).toEqual([]);
  const report = await rebuildInboxes(redis);
  expect(report.chats).toBeGreaterThanOrEqual(24);
  expect(await read()).toEqual(before);
}, 60_000);

test("on a cluster every announcement is a call of its own, even when asked to be made in the append", async () => {
  // The inbox's keys and the chat's hash to different slots (store/scripts.ts
  // `announcedForm` is for a single Redis).
  expect(store.inbox.announceInAppend).toBe(false);
  const asked = new WorkspaceInbox(redis, { announceInAppend: true });
  expect(asked.announceInAppend).toBe(false);
  const at = await asked.announcement(uniqueId("ws"), uniqueId(), 0);
  expect(at.inAppend).toBeUndefined();
  expect(Number(at.token)).toBeGreaterThan(0);
});
