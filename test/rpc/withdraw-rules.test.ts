import { describe, expect, test } from "vitest";
import { Settler, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { expectNotOpen, expectOpenLimit, failureOf, logRecords, watch } from "../support/lists.js";
import { offerOne, refusalOf } from "../support/suggest.js";
import { useWithdrawChats, withdraw } from "../support/withdraw.js";

const { t, session, get } = useWithdrawChats();

describe("retry and the person's rules", () => {
  test("a retried call answers the first result and records nothing, also after a restore", async () => {
    const { sessionId, ids } = await session("Write the docs");
    const call = { sessionId, title: "Write the docs", toolCallId: "call-retry" };
    const first = await withdraw(t.clients, call);
    const again = await withdraw(t.clients, call);
    expect(again).toEqual(first);
    expect(await logRecords(t.redis, sessionId)).toHaveLength(2);

    await t.clients.suggestions.restoreSuggestion({ sessionId, suggestionId: ids[0] as string });
    expect(await withdraw(t.clients, call)).toEqual(first);
    expect(await logRecords(t.redis, sessionId)).toHaveLength(3);
    expect((await get(sessionId, ids[0] as string))?.state).toBe(SuggestionState.OPEN);
    // A new call id withdraws the restored offer again.
    const fresh = await withdraw(t.clients, { ...call, toolCallId: "call-retry-2" });
    expect(fresh.suggestion?.settledAt).not.toEqual(undefined);
    expect(await logRecords(t.redis, sessionId)).toHaveLength(4);
  });

  test("it frees an open slot, counts toward the ten, the person restores it under the ceiling, Start fails not-open", async () => {
    const { sessionId, ids } = await session("One", "Two", "Three");
    const [one] = ids as [string];
    const stale = await withdraw(t.clients, { sessionId, title: "One" });
    const start = await failureOf(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId: one }),
    );
    expectNotOpen(start, one, SuggestionState.DISMISSED);

    // The freed slot takes a new offer: 3 open again.
    const four = await offerOne(t.clients, sessionId, "Four");
    expect((await t.clients.suggestions.listSuggestions({ sessionId })).open).toHaveLength(3);
    // The ceiling holds: no restore while 3 are open.
    expectOpenLimit(
      await failureOf(t.clients.suggestions.restoreSuggestion({ sessionId, suggestionId: one })),
    );
    // Once one is settled, the person restores the withdrawn offer.
    await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: four.id });
    const restored = await t.clients.suggestions.restoreSuggestion({
      sessionId,
      suggestionId: one,
    });
    expect(restored.suggestion).toMatchObject({
      id: one,
      state: SuggestionState.OPEN,
      settledBy: Settler.UNSPECIFIED,
    });
    expect(restored.suggestion?.settledAt).toBeUndefined();
    expect(stale.suggestion?.settledBy).toBe(Settler.AGENT);
    // The person's own dismissal says so.
    expect((await get(sessionId, four.id))?.settledBy).toBe(Settler.PERSON);

    // Withdrawn offers still count toward the ten.
    const { sessionId: busy } = await session();
    for (let i = 0; i < 10; i++) {
      await offerOne(t.clients, busy, `T${i}`);
      await withdraw(t.clients, { sessionId: busy, title: `T${i}` });
    }
    expect((await t.clients.suggestions.listSuggestions({ sessionId: busy })).open).toEqual([]);
    const more = await refusalOf(offerOne(t.clients, busy, "Eleven"));
    expect(more.message).toBe(
      "suggest_task: this chat already offered 10 suggestions; offer no more",
    );
  });

  test("a withdrawal racing the person's settlement of the same offer: exactly one is recorded", async () => {
    for (let round = 0; round < 10; round++) {
      const { sessionId, ids } = await session("Race");
      const id = ids[0] as string;
      const [w, d] = await Promise.allSettled([
        withdraw(t.clients, { sessionId, title: "Race" }),
        t.clients.suggestions.draftSuggestion({ sessionId, suggestionId: id }),
      ]);
      const settled = (await logRecords(t.redis, sessionId)).filter((r) => r.type === "settled");
      expect(settled).toHaveLength(1);
      expect(w.status === "fulfilled").toBe(settled[0]?.by === "agent");
      expect(d.status === "fulfilled").toBe(settled[0]?.by === "person");
    }
  });

  test("Watch shows who settled it", async () => {
    const { sessionId } = await session("Watched");
    const capture = watch(t.clients, sessionId);
    await capture.waitFor((m) => m.open.length === 1);
    await withdraw(t.clients, { sessionId, title: "Watched" });
    const m = await capture.waitFor((m) => m.settled.length === 1);
    expect(m.settled[0]).toMatchObject({
      state: SuggestionState.DISMISSED,
      settledBy: Settler.AGENT,
    });
    capture.cancel();
    await capture.ended;
  });
});
