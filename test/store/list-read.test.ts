import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { listsFromOffers, offerRecordsOf } from "../../server/domain/fold.js";
import type { Outcome } from "../../server/domain/settlement.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { ListsCache } from "../../server/store/lists-cache.js";
import { openOffersOf, readWholeLog } from "../../server/store/log-reads.js";
import { type ListsSnapshot, SuggestionStore } from "../../server/store/suggestion-store.js";
import { redisClient, uniqueId } from "../support/harness.js";
import { appendRaw, projectionFold } from "../support/lists.js";
import { foldLog } from "../support/model/fold.js";

/*
 * The service reads the lists through the projection (lua/readLists-2.lua and
 * `listsFromOffers`), in O(offers). The reference's reading is `foldLog` over the whole
 * stream. On random logs (offers and settlements through the scripts and hand-written,
 * fitting or not, with odd times and missing fields, records of other kinds, projections
 * deleted or left by an older format) both readings must give exactly the same lists
 * after every step, and a projection kept up step by step must equal one rebuilt from
 * the stream.
 */

let redis: RedisClient;
let store: SuggestionStore;
/** A store that holds nothing between reads: each read folds through the projection. */
let uncached: SuggestionStore;
beforeAll(() => {
  redis = redisClient();
  store = new SuggestionStore(redis);
  uncached = new SuggestionStore(redis, undefined, new ListsCache(0));
});
afterAll(() => {
  redis.disconnect();
});

/** The reference's reading: every record of the stream, folded. */
async function reference(sessionId: string): Promise<ListsSnapshot> {
  const records = await store.readLog(sessionId);
  const version = `${records.at(-1)?.entryId ?? "0-0"}:${records.length}`;
  return { version, lists: foldLog(sessionId, records) };
}

type Run = (sessionId: string) => Promise<void>;

/** A step of a random log, with a label for the counterexample fast-check prints. */
const step = (label: string, run: Run) => ({ label, run, toString: () => label });

// Few ids, so that offers, settlements and restores of one offer meet often.
const id = fc.constantFrom("a", "b", "c");
const time = fc.constantFrom(undefined, "", "x", "1700000000123", "1e3", " 42 ", "-5", "12.5");
const outcome = fc.constantFrom("started", "drafted", "dismissed", "restored", "bogus");

/** Fields, leaving out those whose value is undefined. */
function fields(entries: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(entries).filter((e): e is [string, string] => e[1] !== undefined),
  );
}

const steps = fc.oneof(
  { arbitrary: rawOffer(), weight: 3 },
  { arbitrary: rawSettlement(), weight: 4 },
  { arbitrary: rawOther(), weight: 1 },
  { arbitrary: toolOffer(), weight: 2 },
  { arbitrary: scriptSettlement(), weight: 5 },
  { arbitrary: staleProjection(), weight: 1 },
);

/** An `offered` record by another writer: a repeated id, no id or missing fields too. */
function rawOffer() {
  return fc
    .record({
      id: fc.oneof({ arbitrary: id, weight: 8 }, fc.constantFrom("", undefined)),
      time,
      full: fc.boolean(),
      title: fc.constantFrom("T", "x".repeat(300), " spaced ", "émoji 🎉"),
    })
    .map((r) =>
      step(`raw offer ${JSON.stringify(r.id)} time=${JSON.stringify(r.time)}`, async (s) => {
        await appendRaw(
          redis,
          s,
          fields({
            type: "offered",
            id: r.id,
            turn: r.full ? `turn-${r.id}` : undefined,
            title: r.title,
            tldr: r.full ? "tl;dr" : undefined,
            brief: r.full ? "brief" : undefined,
            time: r.time,
          }),
        );
      }),
    );
}

/** A `settled` record by another writer, fitting its offer or not. */
function rawSettlement() {
  return fc
    .record({ id, outcome, chat: fc.option(fc.constantFrom("c1", ""), { nil: undefined }), time })
    .map((r) =>
      step(`raw ${r.outcome} ${r.id} chat=${r.chat} time=${JSON.stringify(r.time)}`, async (s) => {
        const record = {
          type: "settled",
          id: r.id,
          outcome: r.outcome,
          chat: r.chat,
          time: r.time,
        };
        await appendRaw(redis, s, fields(record));
      }),
    );
}

/** Records the fold skips: other kinds, no kind, a settlement without an outcome. */
function rawOther() {
  return fc
    .record({ id, type: fc.constantFrom("note", "OFFERED", undefined, "settled") })
    .map((r) =>
      step(`raw ${r.type} ${r.id}`, async (s) => {
        await appendRaw(redis, s, fields({ type: r.type, id: r.id, note: "x" }));
      }),
    );
}

/** The offer script: recorded, a duplicate of a tool call, or refused by a quota. */
function toolOffer() {
  return fc.record({ id, call: fc.constantFrom("", "k1", "k2"), turn: fc.nat(8) }).map((r) =>
    step(`tool offer ${r.id} call=${r.call} turn=${r.turn}`, async (s) => {
      const offer = { id: r.id, turnId: `t${r.turn}`, toolCallId: r.call };
      await store.offer(s, { ...offer, title: "Tool", tldr: "r", brief: "b" }, false);
    }),
  );
}

/** The settle script, alone or with the lists of the same step (settleAndList). */
function scriptSettlement() {
  return fc
    .record({
      id,
      outcome: fc.constantFrom<Outcome>("started", "drafted", "dismissed", "restored"),
      withLists: fc.boolean(),
    })
    .map((r) =>
      step(`settle ${r.outcome} ${r.id}${r.withLists ? " and list" : ""}`, async (s) => {
        if (!r.withLists) {
          await store.settle(s, r.id, r.outcome, "chat-9");
          return;
        }
        const { lists } = await store.settleAndList(s, r.id, r.outcome, "chat-9");
        expect(lists).toEqual((await reference(s)).lists);
      }),
    );
}

/** The projection deleted, left by an older format, or missing its `seen`: folded again. */
function staleProjection() {
  return fc.constantFrom("delete projection", "older format", "no seen").map((kind) =>
    step(kind, async (s) => {
      const proj = sessionKeys(s).projection;
      if (kind === "delete projection") await redis.del(proj);
      else if (kind === "no seen") await redis.hdel(proj, "seen");
      else await redis.hset(proj, "v", "1");
    }),
  );
}

test("on random logs the projection's lists equal the fold of the whole stream", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(steps, { minLength: 4, maxLength: 30, size: "max" }), async (run) => {
      const sessionId = uniqueId("read");
      try {
        for (const { run: exec } of run) {
          await exec(sessionId);
          const expected = await reference(sessionId);
          expect(await uncached.snapshot(sessionId)).toEqual(expected);
          // The instance's cache, read at every step, never answers another version.
          expect(await store.snapshot(sessionId)).toEqual(expected);
          // The readings of the log alone (Redis refusing writes: store/log-reads.ts):
          // the same lists, and the inbox's open offers at the same places.
          const log = await readWholeLog(redis, sessionId);
          expect(log.version).toBe(expected.version);
          expect(listsFromOffers(sessionId, offerRecordsOf(log.records))).toEqual(expected.lists);
          const inboxEntries = await store.inbox.chatEntries(sessionId, "*");
          expect(openOffersOf(log.records, "*").map((o) => [o.position, o.record])).toEqual(
            inboxEntries.map((e) => {
              const [entryId, fields] = JSON.parse(e.doc) as [string, Record<string, string>];
              return [Number(e.member.slice(-10)), { entryId, fields }];
            }),
          );
        }
        // Kept step by step, the projection is the one a rebuild from the stream makes.
        const proj = sessionKeys(sessionId).projection;
        await uncached.snapshot(sessionId);
        const kept = await projectionFold(redis, sessionId);
        await redis.del(proj);
        expect(await uncached.snapshot(sessionId)).toEqual(await reference(sessionId));
        expect(await projectionFold(redis, sessionId)).toEqual(kept);
      } finally {
        const keys = sessionKeys(sessionId);
        await redis.del(keys.log, keys.projection);
      }
    }),
    { numRuns: 60 },
  );
}, 60_000);

test("an empty or unknown session reads as empty lists at version 0-0:0", async () => {
  const sessionId = uniqueId("read");
  const snapshot = await store.snapshot(sessionId);
  expect(snapshot.version).toBe("0-0:0");
  expect(snapshot.lists.open).toEqual([]);
  expect(snapshot.lists.settled).toEqual([]);
  expect(await redis.exists(sessionKeys(sessionId).projection)).toBe(0);
});

test("a projection written before the offer order and settlements were kept is folded again", async () => {
  const sessionId = uniqueId("read");
  for (const i of [1, 2, 3]) {
    const offer = { id: `o${i}`, turnId: `t${i}`, toolCallId: "", title: "T", tldr: "r" };
    await store.offer(sessionId, { ...offer, brief: "b" }, false);
  }
  await store.settle(sessionId, "o2", "drafted");
  await store.settle(sessionId, "o3", "dismissed");
  const proj = sessionKeys(sessionId).projection;
  const current = await projectionFold(redis, sessionId);
  // The previous format: the same hash without `v`, `i:<n>` and `a:<id>`.
  const newer = Object.keys(current).filter((f) => f === "v" || /^[ia]:/.test(f));
  expect(newer).toEqual(expect.arrayContaining(["v", "i:1", "i:2", "i:3", "a:o2", "a:o3"]));
  await redis.hdel(proj, ...newer);

  expect(await uncached.snapshot(sessionId)).toEqual(await reference(sessionId));
  expect(await projectionFold(redis, sessionId)).toEqual(current);
  const keys = sessionKeys(sessionId);
  await redis.del(keys.log, keys.projection);
});
