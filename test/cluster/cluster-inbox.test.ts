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

test("on a cluster an announcement is a call of its own, in the workspace's slot, and the append tells the workspace's channel from the writer", async () => {
  // The inbox's keys and the chat's hash to different slots.
  const inbox = new WorkspaceInbox(redis);
  expect(inbox.tellsInScript).toBe(false);
  const workspaceId = uniqueId("ws");
  const at = await inbox.announcement(workspaceId, uniqueId(), 0);
  expect(at.workspace).toBe(workspaceId);
  expect(Number(at.token)).toBeGreaterThan(0);
});
