import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { ListsCache } from "../../server/store/lists-cache.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { redisClient, uniqueId } from "../support/harness.js";

/*
 * The instance's cache of lists by version (store/lists-cache.ts): bounded, shared and
 * frozen. That it never answers an older version is test/e2e/cross-instance-cache.test.ts.
 */

let redis: RedisClient;
beforeAll(() => {
  redis = redisClient();
});
afterAll(() => {
  redis.disconnect();
});

const offer = (store: SuggestionStore, sessionId: string, id: string) =>
  store.offer(
    sessionId,
    { id, turnId: `t-${id}`, toolCallId: "", title: "T", tldr: "r", brief: "b" },
    false,
  );

test("it holds at most maxSessions sessions, forgetting the least recently read", async () => {
  const store = new SuggestionStore(redis, undefined, new ListsCache(2));
  const [s1, s2, s3] = [uniqueId("lru"), uniqueId("lru"), uniqueId("lru")];
  for (const s of [s1, s2, s3]) await offer(store, s, "a");
  await store.lists(s1);
  await store.lists(s2);
  await store.lists(s1);
  await store.lists(s3);
  expect(store.cache.size).toBe(2);
  expect(store.cache.heldLists(s2)).toBeUndefined();
  expect(store.cache.heldLists(s1)?.lists.open.map((s) => s.id)).toEqual(["a"]);
  for (let i = 0; i < 50; i++) await store.lists(uniqueId("lru"));
  expect(store.cache.size).toBe(2);
  for (const s of [s1, s2, s3]) await redis.del(sessionKeys(s).log, sessionKeys(s).projection);
});

test("one version's lists are one frozen object for every read; a change makes new ones", async () => {
  const store = new SuggestionStore(redis);
  const sessionId = uniqueId("frozen");
  await offer(store, sessionId, "a");
  const first = await store.lists(sessionId);
  expect(await store.lists(sessionId)).toBe(first);
  expect((await store.suggestion(sessionId, "a")) === first.byId.get("a")).toBe(true);
  expect(Object.isFrozen(first.byId.get("a"))).toBe(true);
  expect(Object.isFrozen(first.open)).toBe(true);
  expect(() => {
    (first.byId.get("a") as { title: string }).title = "changed";
  }).toThrow(TypeError);

  await offer(store, sessionId, "b");
  const second = await store.lists(sessionId);
  expect(second).not.toBe(first);
  expect(second.open.map((s) => s.id)).toEqual(["b", "a"]);
  expect(await store.suggestion(sessionId, "nope")).toBeUndefined();
  const keys = sessionKeys(sessionId);
  await redis.del(keys.log, keys.projection);
});

test("a change of one offer makes one new suggestion: the others stay the objects read before", async () => {
  const writer = new SuggestionStore(redis);
  const reader = new SuggestionStore(redis);
  const sessionId = uniqueId("reuse");
  for (const id of ["a", "b", "c"]) await offer(writer, sessionId, id);
  const first = await reader.lists(sessionId);
  const [a, b, c] = ["a", "b", "c"].map((id) => first.byId.get(id));

  // A delta (one entry since the version held).
  expect((await writer.settle(sessionId, "b", "dismissed")).kind).toBe("recorded");
  const second = await reader.lists(sessionId);
  expect(second.open.map((s) => s.id)).toEqual(["c", "a"]);
  expect(second.byId.get("a")).toBe(a);
  expect(second.byId.get("c")).toBe(c);
  expect(second.byId.get("b")).not.toBe(b);
  expect(second.settled.map((s) => s.id)).toEqual(["b"]);

  // A whole fold (more entries than a delta carries): the same objects still.
  for (let i = 0; i < 34; i++) {
    const outcome = i % 2 === 0 ? "restored" : "dismissed";
    expect((await writer.settle(sessionId, "b", outcome)).kind).toBe("recorded");
  }
  const third = await reader.lists(sessionId);
  expect(third.open.map((s) => s.id)).toEqual(["c", "a"]);
  expect(third.byId.get("a")).toBe(a);
  expect(third.byId.get("c")).toBe(c);

  // GetSuggestion of a new version reuses the fold too.
  expect((await writer.settle(sessionId, "b", "restored")).kind).toBe("recorded");
  expect(await reader.suggestion(sessionId, "a")).toBe(a);
  expect((await reader.suggestion(sessionId, "b"))?.state).toBe(SuggestionState.OPEN);
  const keys = sessionKeys(sessionId);
  await redis.del(keys.log, keys.projection);
});
