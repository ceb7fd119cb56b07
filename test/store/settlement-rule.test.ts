import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { LIFETIME_LIMIT, OPEN_LIMIT, TURN_LIMIT } from "../../server/domain/limits.js";
import {
  OUTCOMES,
  type Outcome,
  STANDING_WORDS,
  stateAfter,
} from "../../server/domain/settlement.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { redisClient, uniqueId } from "../support/harness.js";
import { settleAnswer } from "../support/model/settlement.js";

/*
 * The settlement rule and the quotas live in server/domain/ (settlement.ts, limits.ts);
 * the Lua scripts enforce them atomically. These tests run every case through the
 * scripts on a real Redis and compare their answers with the TypeScript reading.
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

let turn = 0;
async function offer(sessionId: string): Promise<string> {
  const id = uniqueId("o");
  turn++;
  const outcome = await store.offer(
    sessionId,
    { id, turnId: `t${turn}`, toolCallId: "", title: "T", tldr: "R", brief: "B" },
    false,
  );
  expect(outcome.kind).toBe("recorded");
  return id;
}

/** The ways to bring an offer to a standing, from open. */
const TO_STANDING: Readonly<Record<string, readonly Outcome[]>> = {
  open: [],
  started: ["started"],
  drafted: ["drafted"],
  dismissed: ["dismissed"],
  restored: ["dismissed", "restored"],
};

for (const [standing, path] of Object.entries(TO_STANDING)) {
  for (const outcome of OUTCOMES) {
    for (const othersOpen of [0, OPEN_LIMIT]) {
      test(`${outcome} on a ${standing} offer with ${othersOpen} others open: Lua answers as settleAnswer`, async () => {
        const sessionId = uniqueId();
        const id = await offer(sessionId);
        for (const step of path) await store.settle(sessionId, id, step, "chat-1");
        const state = STANDING_WORDS[standing === "restored" ? "open" : standing];
        // As many others open as the open limit leaves room for.
        const room = OPEN_LIMIT - (state === SuggestionState.OPEN ? 1 : 0);
        for (let i = 0; i < Math.min(othersOpen, room); i++) await offer(sessionId);
        const before = (await store.lists(sessionId)).byId.get(id)?.state;
        const openCount = (await store.lists(sessionId)).open.length;
        expect(before).toBe(state);
        const answer = await store.settle(sessionId, id, outcome, "chat-2");
        const expected = settleAnswer(state as SuggestionState, outcome, openCount);
        expect(answer.kind).toBe(expected);
        const after = (await store.lists(sessionId)).byId.get(id)?.state;
        expect(after).toBe(expected === "recorded" ? stateAfter(outcome) : state);
      });
    }
  }
}

test("the offer script refuses at the domain's quotas", async () => {
  expect([LIFETIME_LIMIT, OPEN_LIMIT, TURN_LIMIT]).toEqual([10, 3, 1]);
  const sessionId = uniqueId();
  const ids: string[] = [];
  for (let i = 0; i < OPEN_LIMIT; i++) ids.push(await offer(sessionId));
  const next = { id: uniqueId("o"), turnId: "fresh", toolCallId: "", title: "T", tldr: "R" };
  expect((await store.offer(sessionId, { ...next, brief: "B" }, false)).kind).toBe("open-limit");
  // The same turn again: one per turn.
  for (const id of ids) await store.settle(sessionId, id, "drafted");
  const sameTurn = { ...next, brief: "B", turnId: `t${turn}` };
  expect((await store.offer(sessionId, sameTurn, false)).kind).toBe("turn-limit");
  // Up to the lifetime limit, then no more.
  while (
    (await store.readLog(sessionId)).filter((r) => r.fields.type === "offered").length <
    LIFETIME_LIMIT
  ) {
    const id = await offer(sessionId);
    await store.settle(sessionId, id, "dismissed");
  }
  expect((await store.offer(sessionId, { ...next, brief: "B" }, false)).kind).toBe(
    "lifetime-limit",
  );
});
