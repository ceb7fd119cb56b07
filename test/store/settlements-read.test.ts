import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { LAST_STREAM_ID } from "../../server/domain/cursor.js";
import type { Outcome } from "../../server/domain/settlement.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { redisClient, uniqueId } from "../support/harness.js";
import { appendRaw, projectionFold } from "../support/lists.js";
import { foldLog, foldSettlements } from "../support/model/fold.js";

/*
 * ListSettlements reads through the projection (lua/settlements-2.lua): the records after
 * the cursor, and the projection's marks of the settlements the fold rejected. The
 * reference is `foldSettlements` over the whole stream. On random logs (the scripts'
 * offers, settlements and withdrawals, hand-written settlements with and without `by`,
 * fitting or not, projections deleted or of an older format) both must answer the same
 * settlements after every cursor, and the lists the same `settled_by` as `foldLog`.
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

type Run = (sessionId: string) => Promise<void>;
const step = (label: string, run: Run) => ({ label, run, toString: () => label });
const id = fc.constantFrom("a", "b", "c");
const title = fc.constantFrom("A", "B", " A ");

const steps = fc.oneof(
  fc.record({ id, title, turn: fc.nat(20) }).map((r) =>
    step(`offer ${r.id} "${r.title}"`, async (s) => {
      const offer = { id: r.id, turnId: `t${r.turn}`, toolCallId: "", title: r.title.trim() };
      await store.offer(s, { ...offer, tldr: "r", brief: "b" }, false);
    }),
  ),
  fc
    .record({
      id,
      outcome: fc.constantFrom<Outcome>("started", "drafted", "dismissed", "restored"),
    })
    .map((r) =>
      step(`settle ${r.outcome} ${r.id}`, async (s) => {
        await store.settle(s, r.id, r.outcome, "chat-1");
      }),
    ),
  fc.record({ title, call: fc.constantFrom("", "w1", "w2") }).map((r) =>
    step(`withdraw "${r.title}" call=${r.call}`, async (s) => {
      await store.withdraw(s, { title: r.title.trim(), reason: "stale", toolCallId: r.call });
    }),
  ),
  fc
    .record({
      id: fc.constantFrom("a", "b", "c", "ghost", ""),
      outcome: fc.constantFrom("started", "dismissed", "restored", "bogus"),
      by: fc.constantFrom(undefined, "person", "agent", "robot"),
    })
    .map((r) =>
      step(`raw ${r.outcome} ${r.id} by=${r.by}`, async (s) => {
        const record: Record<string, string> = { type: "settled", id: r.id, outcome: r.outcome };
        if (r.by !== undefined) record.by = r.by;
        await appendRaw(redis, s, record);
      }),
    ),
  fc.constantFrom("delete projection", "older format").map((kind) =>
    step(kind, async (s) => {
      const proj = sessionKeys(s).projection;
      if (kind === "delete projection") await redis.del(proj);
      else await redis.hset(proj, "v", "2");
    }),
  ),
);

/** Both readings after every cursor the log offers: the start, each entry, past the end. */
async function expectSameSettlements(sessionId: string): Promise<void> {
  const records = await store.readLog(sessionId);
  const cursors = ["", "0-0", ...records.map((r) => r.entryId), LAST_STREAM_ID];
  for (const after of cursors) {
    expect(await store.settlements(sessionId, after)).toEqual(
      foldSettlements(sessionId, records, after),
    );
  }
  expect(await store.lists(sessionId)).toEqual(foldLog(sessionId, records));
}

test("on random logs ListSettlements' reading equals the fold of the whole stream, after every cursor", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(steps, { minLength: 3, maxLength: 25, size: "max" }), async (run) => {
      const sessionId = uniqueId("settlements");
      try {
        for (const { run: exec } of run) {
          await exec(sessionId);
          await expectSameSettlements(sessionId);
        }
        // Kept step by step, the projection is the one a rebuild from the stream makes.
        const proj = sessionKeys(sessionId).projection;
        const kept = await projectionFold(redis, sessionId);
        await redis.del(proj);
        await expectSameSettlements(sessionId);
        expect(await projectionFold(redis, sessionId)).toEqual(kept);
      } finally {
        const keys = sessionKeys(sessionId);
        await redis.del(keys.log, keys.projection);
      }
    }),
    { numRuns: 50 },
  );
}, 120_000);
