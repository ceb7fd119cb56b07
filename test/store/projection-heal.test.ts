import { afterAll, beforeAll, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { type NewOffer, SuggestionStore } from "../../server/store/suggestion-store.js";
import { redisClient, uniqueId } from "../support/harness.js";
import { projectionFold, withoutFences } from "../support/lists.js";
import { foldLog } from "../support/model/fold.js";

/*
 * The projection hash is a cache of the log's fold (store/lua/includes/projection.lua).
 * Whatever is done to it (one field deleted, a counter that disagrees, the log losing
 * an entry), every script answers as the log would: the same lists, the same quota
 * answers.
 */

let redis: RedisClient;
let store: SuggestionStore;
beforeAll(() => {
  redis = redisClient();
  store = new SuggestionStore(redis);
});
afterAll(() => {
  redis.disconnect();
});

const newOffer = (turnId: string, toolCallId = ""): NewOffer => ({
  id: uniqueId("o"),
  turnId,
  toolCallId,
  title: `Offer of ${turnId}`,
  tldr: "Why",
  brief: "Brief",
});

/** A chat with every kind of field: open, started, drafted, dismissed and restored offers. */
async function chatOfEveryKind(): Promise<string> {
  const sessionId = uniqueId();
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const offer = newOffer(`turn-${i}`, `call-${i}`);
    const outcome = await store.offer(sessionId, offer, false);
    expect(outcome.kind).toBe("recorded");
    ids.push(offer.id);
    if (i === 0) await store.settle(sessionId, offer.id, "started", "chat-a");
    if (i === 1) await store.settle(sessionId, offer.id, "drafted");
    if (i === 2) await store.settle(sessionId, offer.id, "dismissed");
    if (i === 3) {
      await store.settle(sessionId, offer.id, "dismissed");
      await store.settle(sessionId, offer.id, "restored");
    }
  }
  return sessionId;
}

/** What the chat answers: its lists, and the quota checks of the next offers. */
async function answers(sessionId: string) {
  const lists = await store.lists(sessionId);
  const quota = {
    freshTurn: (await store.offer(sessionId, newOffer("fresh"), true)).kind,
    usedTurn: (await store.offer(sessionId, newOffer("turn-5"), true)).kind,
    retried: (await store.offer(sessionId, newOffer("turn-9", "call-4"), true)).kind,
  };
  return { open: lists.open, settled: lists.settled, quota };
}

/** The log's own answer: its records folded, whatever the projection holds. */
async function fromLog(sessionId: string) {
  return foldLog(sessionId, await store.readLog(sessionId));
}

test("an intact projection is kept: each write folds its own record, none again", async () => {
  const sessionId = await chatOfEveryKind();
  const { projection } = sessionKeys(sessionId);
  await answers(sessionId);
  const kept = await redis.hgetall(projection);
  // Never folded again from the first record, which would have fenced every token (f:*).
  expect(kept["f:*"]).toBeUndefined();
  expect(Number(kept.h)).toBe(Object.keys(kept).length);
  // As a fold of the whole log writes it: deleted, then read by an instance with no
  // lists cache, it comes back the same.
  await redis.del(projection);
  await new SuggestionStore(redis).lists(sessionId);
  expect(await projectionFold(redis, sessionId)).toEqual(withoutFences(kept));
});

test("deleting any one field of a chat's projection changes no answer", async () => {
  const sessionId = await chatOfEveryKind();
  const { projection } = sessionKeys(sessionId);
  const expected = await answers(sessionId);
  const truth = await fromLog(sessionId);
  expect(expected.open).toEqual(truth.open);
  expect(expected.settled).toEqual(truth.settled);
  expect(expected.quota).toEqual({
    freshTurn: "open-limit",
    usedTurn: "open-limit",
    retried: "duplicate",
  });
  const intact = await redis.hgetall(projection);
  const fields = Object.keys(intact);
  expect(fields.length).toBeGreaterThan(30);
  for (const field of fields) {
    await redis.del(projection);
    await redis.hset(projection, intact);
    await redis.hdel(projection, field);
    expect({ field, ...(await answers(sessionId)) }).toEqual({ field, ...expected });
    // Healed: the projection is whole again (less the inbox fence a rebuild sets, f:*).
    expect(await projectionFold(redis, sessionId)).toEqual(withoutFences(intact));
  }
});

test("counters that disagree with the fields they count are rebuilt", async () => {
  const sessionId = await chatOfEveryKind();
  const { projection } = sessionKeys(sessionId);
  const expected = await answers(sessionId);
  const intact = await redis.hgetall(projection);
  const damage: Record<string, string>[] = [
    { n: "7" },
    { n: "2" },
    { open: "0" },
    { open: "3" },
    { m: "1" },
    { h: "5" },
    { seen: "0-1" },
    { v: "1" },
    { m: "k1" },
  ];
  for (const fields of damage) {
    await redis.del(projection);
    await redis.hset(projection, { ...intact, ...fields });
    expect({ fields, ...(await answers(sessionId)) }).toEqual({ fields, ...expected });
  }
  // A projection that names another log is folded again from this one (a fold from the
  // first record sets f:*), though it answers as this log's fold would.
  await redis.del(projection);
  await redis.hset(projection, { ...intact, l: "{another}:log" });
  expect(await answers(sessionId)).toEqual(expected);
  const refolded = await redis.hgetall(projection);
  expect(refolded.l).toBe(sessionKeys(sessionId).log);
  expect(refolded["f:*"]).toBeDefined();
  // Two writers whose records interleaved in one file: n = 2 but only i:1.
  await redis.del(projection);
  await redis.hset(projection, intact);
  await redis.hdel(projection, "i:2", "h");
  expect(await answers(sessionId)).toEqual(expected);
});

test("a counter the scripts would not write (2.5 offers) is folded again, not counted on", async () => {
  const sessionId = uniqueId();
  for (const turn of ["a", "b"]) await store.offer(sessionId, newOffer(turn), false);
  const { projection } = sessionKeys(sessionId);
  // Every other field agrees with it: i:1 and i:2, two open.
  await redis.hset(projection, "n", "2.5");
  expect((await store.offer(sessionId, newOffer("c"), false)).kind).toBe("recorded");
  const written = await projectionFold(redis, sessionId);
  expect(written["i:3"]).toBeDefined();
  await redis.del(projection);
  await new SuggestionStore(redis).lists(sessionId);
  expect(await projectionFold(redis, sessionId)).toEqual(written);
});

test("a log that lost an entry is folded again, and the quotas follow the log", async () => {
  const sessionId = uniqueId();
  const offers = [newOffer("a"), newOffer("b"), newOffer("c")];
  for (const offer of offers) await store.offer(sessionId, offer, false);
  expect((await store.offer(sessionId, newOffer("d"), true)).kind).toBe("open-limit");
  const first = (await store.readLog(sessionId))[0]?.entryId as string;
  await redis.xdel(sessionKeys(sessionId).log, first);
  // The log now holds two offers: one more fits, as the log's fold says.
  expect((await fromLog(sessionId)).open).toHaveLength(2);
  expect((await store.lists(sessionId)).open).toEqual((await fromLog(sessionId)).open);
  expect((await store.offer(sessionId, newOffer("d"), true)).kind).toBe("quota-ok");
});

test("a projection copied from another chat, whose log ends at the same id, is folded again", async () => {
  const [from, onto] = [uniqueId(), uniqueId()];
  const copied = newOffer("t", "call-copied");
  expect((await store.offer(from, copied, false)).kind).toBe("recorded");
  const [entry] = await store.readLog(from);
  if (entry === undefined) throw new Error("no record");
  // The other chat's log: one offer of another tool call, under the same stream id.
  const own = newOffer("t", "call-own");
  const [[, fields] = ["", []]] = await redis.xrange(sessionKeys(from).log, "-", "+");
  const record = Object.fromEntries(
    fields.reduce<[string, string][]>((pairs, value, i, all) => {
      if (i % 2 === 0) pairs.push([value, all[i + 1] as string]);
      return pairs;
    }, []),
  );
  const ownRecord = { ...record, id: own.id, call: own.toolCallId, title: own.title };
  await redis.xadd(sessionKeys(onto).log, entry.entryId, ...Object.entries(ownRecord).flat());
  // Its projection, copied by hand from the first chat's key: it agrees with itself, and
  // with the log's tip (the same id, after as many entries).
  await redis.hset(sessionKeys(onto).projection, await redis.hgetall(sessionKeys(from).projection));

  const truth = await fromLog(onto);
  expect(truth.open.map((s) => s.id)).toEqual([own.id]);
  expect((await new SuggestionStore(redis).lists(onto)).open).toEqual(truth.open);
  // The copied chat's tool call is no duplicate here; this chat's own is.
  const again = await store.offer(onto, { ...copied, id: uniqueId("o"), turnId: "t2" }, true);
  expect(again.kind).toBe("quota-ok");
  const retried = await store.offer(onto, { ...own, id: uniqueId("o") }, false);
  expect(retried.kind).toBe("duplicate");
  if (retried.kind !== "duplicate") throw new Error("not a duplicate");
  expect(retried.suggestion.id).toBe(own.id);
  expect(await projectionFold(redis, onto)).toMatchObject({
    l: sessionKeys(onto).log,
    [`c:${own.toolCallId}`]: own.id,
  });
  expect((await projectionFold(redis, onto))[`c:${copied.toolCallId}`]).toBeUndefined();
});
