import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Outcome } from "../../server/domain/settlement.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { runScript } from "../../server/store/run-script.js";
import type { ScriptReply } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { redisClient, uniqueId } from "../support/harness.js";
import { appendRaw } from "../support/lists.js";
import { foldLog } from "../support/model/fold.js";

/*
 * A read of a chat whose log only grew since the version the reader holds gets only the
 * offers the new entries name (lua/readLists-2.lua's delta), and the reader's lists are
 * still the fold of the whole log (store/lists-cache.ts `grownLists`): after offers,
 * settlements, hand-written records of any kind, deleted entries and projections.
 */

let redis: RedisClient;
let writer: SuggestionStore;
beforeAll(() => {
  redis = redisClient();
  writer = new SuggestionStore(redis);
});
afterAll(() => {
  redis.disconnect();
});

const newOffer = (id: string, turn: string) => ({
  id,
  turnId: turn,
  toolCallId: "",
  title: `T ${id}`,
  tldr: "r",
  brief: "b",
});

/** The raw reply of a read against `have`. */
function readAgainst(sessionId: string, have: string): Promise<ScriptReply> {
  const keys = sessionKeys(sessionId);
  return runScript(redis, "readLists", keys.log, keys.projection, have);
}

test("one settlement after a read: the reply names that offer alone, and the lists are the log's", async () => {
  const sessionId = uniqueId("delta");
  for (const id of ["a", "b", "c"]) await writer.offer(sessionId, newOffer(id, id), false);
  const reader = new SuggestionStore(redis);
  const held = await reader.snapshot(sessionId);
  await writer.settle(sessionId, "b", "dismissed");
  const reply = await readAgainst(sessionId, held.version);
  expect(reply[1]).toBe("delta");
  expect(reply).toHaveLength(4);
  expect((reply[2] as [string, string[]])[1]).toContain("b");
  const lists = await reader.lists(sessionId);
  expect(lists).toEqual(foldLog(sessionId, await reader.readLog(sessionId)));
  // The suggestions the entries did not name are the very objects held before.
  expect(lists.byId.get("a")).toBe(held.lists.byId.get("a"));
  expect(lists.byId.get("b")).not.toBe(held.lists.byId.get("b"));
});

test("a deleted entry, or more than 32 new ones, is answered with the whole lists", async () => {
  const sessionId = uniqueId("delta-full");
  await writer.offer(sessionId, newOffer("a", "a"), false);
  const entry = await appendRaw(redis, sessionId, { type: "settled", id: "ghost", outcome: "x" });
  const { version } = await writer.snapshot(sessionId);
  await redis.xdel(sessionKeys(sessionId).log, entry);
  await appendRaw(redis, sessionId, { type: "settled", id: "a", outcome: "dismissed" });
  await appendRaw(redis, sessionId, { type: "settled", id: "a", outcome: "restored" });
  // One entry fewer below the version, two more above it: not a log that only grew.
  expect((await readAgainst(sessionId, version))[1]).not.toBe("delta");
  const grown = (await writer.snapshot(sessionId)).version;
  for (let i = 0; i < 33; i++) await appendRaw(redis, sessionId, { type: "note" });
  expect((await readAgainst(sessionId, grown))[1]).not.toBe("delta");
  expect(await writer.lists(sessionId)).toEqual(
    foldLog(sessionId, await writer.readLog(sessionId)),
  );
});

type Run = (sessionId: string) => Promise<void>;
const step = (label: string, run: Run) => ({ label, run, toString: () => label });
const id = fc.constantFrom("a", "b", "c", "d");

const steps = fc.oneof(
  fc.record({ id, turn: fc.nat(6) }).map((r) =>
    step(`offer ${r.id} t${r.turn}`, async (s) => {
      await writer.offer(s, newOffer(r.id, `t${r.turn}`), false);
    }),
  ),
  fc
    .record({
      id,
      outcome: fc.constantFrom<Outcome>("started", "drafted", "dismissed", "restored"),
    })
    .map((r) =>
      step(`settle ${r.outcome} ${r.id}`, async (s) => {
        await writer.settle(s, r.id, r.outcome, "chat-1");
      }),
    ),
  fc
    .record({
      type: fc.constantFrom("offered", "settled", "note"),
      id: fc.constantFrom("a", "b", "e", "ghost", ""),
      outcome: fc.constantFrom("started", "dismissed", "restored", "bogus"),
    })
    .map((r) =>
      step(`raw ${r.type} ${r.id} ${r.outcome}`, async (s) => {
        const record: Record<string, string> = { type: r.type, id: r.id, outcome: r.outcome };
        if (r.type === "offered") Object.assign(record, { title: "Raw", tldr: "r", brief: "b" });
        await appendRaw(redis, s, record);
      }),
    ),
  fc.nat(40).map((n) =>
    step(`xdel entry ${n}`, async (s) => {
      const entries = await redis.xrange(sessionKeys(s).log, "-", "+");
      const entry = entries[n % Math.max(1, entries.length)];
      if (entry !== undefined) await redis.xdel(sessionKeys(s).log, entry[0]);
    }),
  ),
  fc.constant(
    step("delete projection", async (s) => {
      await redis.del(sessionKeys(s).projection);
    }),
  ),
);

test("on random logs a reader that holds the previous version reads the fold of the whole log", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(steps, { minLength: 3, maxLength: 30, size: "max" }), async (run) => {
      const sessionId = uniqueId("delta-model");
      const reader = new SuggestionStore(redis);
      try {
        for (const { run: exec } of run) {
          await exec(sessionId);
          expect(await reader.lists(sessionId)).toEqual(
            foldLog(sessionId, await reader.readLog(sessionId)),
          );
        }
      } finally {
        const keys = sessionKeys(sessionId);
        await redis.del(keys.log, keys.projection);
      }
    }),
    { numRuns: 60 },
  );
}, 120_000);
