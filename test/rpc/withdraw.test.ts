import { Code } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import {
  AgentRole,
  RefusalReason,
  Settler,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { uniqueId } from "../support/harness.js";
import { appendRaw, failureOf, logRecords } from "../support/lists.js";
import { expectRefusal, refusalOf } from "../support/suggest.js";
import {
  expectNoOpenOffer,
  useWithdrawChats,
  WITHDRAW_TEXT,
  withdraw,
} from "../support/withdraw.js";

const { t, session, get } = useWithdrawChats();

describe("withdraw", () => {
  test("an open offer is dismissed by the agent, with the reason and the call on the record", async () => {
    const { sessionId, ids } = await session("Write the docs", "Fix the flaky test");
    const [docs, flaky] = ids as [string, string];
    const res = await withdraw(t.clients, {
      sessionId,
      title: "  Write the docs \n",
      reason: " Done here already. ",
      toolCallId: "call-w1",
    });
    expect(res.result).toBe(WITHDRAW_TEXT.success("Write the docs"));
    expect(res.result).toBe(
      'Withdrew "Write the docs". It stays dismissed unless the user restores it.',
    );
    expect(res.suggestion).toMatchObject({
      id: docs,
      sessionId,
      title: "Write the docs",
      state: SuggestionState.DISMISSED,
      settledBy: Settler.AGENT,
      chatId: "",
    });
    expect(res.suggestion?.settledAt).toBeDefined();

    const log = await logRecords(t.redis, sessionId);
    expect(log).toHaveLength(3);
    expect(log[2]).toEqual({
      type: "settled",
      id: docs,
      outcome: "dismissed",
      by: "agent",
      reason: "Done here already.",
      call: "call-w1",
      time: expect.any(String),
    });
    // List and Get show it as the answer did; the other offer stays open, unsettled.
    const lists = await t.clients.suggestions.listSuggestions({ sessionId });
    expect(lists.settled).toEqual([res.suggestion]);
    expect(lists.open.map((s) => [s.id, s.settledBy])).toEqual([[flaky, Settler.UNSPECIFIED]]);
    expect(await get(sessionId, docs)).toEqual(res.suggestion);
  });

  test("the newest open offer of that exact title is the one withdrawn", async () => {
    // The tool refuses a second offer of one title, so the log gets them as an older
    // writer recorded them.
    const { sessionId } = await session("Unrelated");
    const [older, newer, lower] = ["same-older", "same-newer", "same-lower"] as const;
    for (const [id, title] of [
      [older, "Same title"],
      [newer, "Same title"],
      [lower, "same title"],
    ] as const) {
      await appendRaw(t.redis, sessionId, {
        type: "offered",
        id,
        turn: id,
        title,
        tldr: "t",
        brief: "b",
      });
    }
    const first = await withdraw(t.clients, { sessionId, title: "Same title" });
    expect(first.suggestion?.id).toBe(newer);
    const second = await withdraw(t.clients, { sessionId, title: "Same title" });
    expect(second.suggestion?.id).toBe(older);
    expectNoOpenOffer(
      await refusalOf(withdraw(t.clients, { sessionId, title: "Same title" })),
      "Same title",
    );
    expect((await get(sessionId, lower))?.state).toBe(SuggestionState.OPEN);
  });

  test("a started, drafted or already dismissed offer has no open offer of its title", async () => {
    const { sessionId, ids } = await session("Started one", "Drafted one", "Dismissed one");
    const [started, drafted, dismissed] = ids as [string, string, string];
    await t.clients.suggestions.startSuggestion({ sessionId, suggestionId: started });
    await t.clients.suggestions.draftSuggestion({ sessionId, suggestionId: drafted });
    await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: dismissed });
    const before = await logRecords(t.redis, sessionId);
    for (const title of ["Started one", "Drafted one", "Dismissed one"]) {
      expectNoOpenOffer(await refusalOf(withdraw(t.clients, { sessionId, title })), title);
    }
    // Withdrawn already: the same refusal.
    const { sessionId: other } = await session("Twice");
    await withdraw(t.clients, { sessionId: other, title: "Twice" });
    expectNoOpenOffer(
      await refusalOf(withdraw(t.clients, { sessionId: other, title: "Twice" })),
      "Twice",
    );
    expect(await logRecords(t.redis, sessionId)).toEqual(before);
    expect(await logRecords(t.redis, other)).toHaveLength(2);
  });

  test("a title no open offer has", async () => {
    const { sessionId } = await session("Write the docs");
    const r = await refusalOf(withdraw(t.clients, { sessionId, title: "Write the doc" }));
    expectNoOpenOffer(r, "Write the doc");
    expect(r.message).toBe('withdraw_suggestion: no open suggestion is titled "Write the doc"');
    // A chat that never offered anything refuses the same way.
    const { sessionId: empty } = await session();
    expectNoOpenOffer(await refusalOf(withdraw(t.clients, { sessionId: empty, title: "X" })), "X");
    expect(await logRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test("any role but the top-level agent is refused, before anything else", async () => {
    const { sessionId } = await session("Write the docs");
    for (const role of [AgentRole.HELPER, AgentRole.FORKED_HELPER, AgentRole.UNSPECIFIED, 99]) {
      const r = await refusalOf(
        withdraw(t.clients, { sessionId: "", turnId: "", title: "", role: role as AgentRole }),
      );
      expectRefusal(r, {
        message: "withdraw_suggestion is only for the top-level agent.",
        code: Code.PermissionDenied,
        reason: RefusalReason.NOT_TOP_LEVEL,
        domain: "withdraw_suggestion",
      });
      const again = await refusalOf(
        withdraw(t.clients, { sessionId, title: "Write the docs", role: role as AgentRole }),
      );
      expect(again.message).toBe(WITHDRAW_TEXT.helper);
    }
    expect(await logRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test("no owning session: empty, or one the host does not know", async () => {
    for (const sessionId of ["", uniqueId("unknown")]) {
      const r = await refusalOf(withdraw(t.clients, { sessionId, turnId: "", title: "" }));
      expectRefusal(r, {
        message: "withdraw_suggestion requires an owning agent session",
        code: Code.FailedPrecondition,
        reason: RefusalReason.NO_SESSION,
        domain: "withdraw_suggestion",
      });
    }
  });

  test("without an open turn, then the fields in order (trimmed, in code points)", async () => {
    const { sessionId } = await session("Write the docs");
    const noTurn = await refusalOf(withdraw(t.clients, { sessionId, turnId: "", title: "" }));
    expectRefusal(noTurn, {
      message: "withdraw_suggestion: requires an open model turn",
      code: Code.FailedPrecondition,
      reason: RefusalReason.NO_OPEN_TURN,
      domain: "withdraw_suggestion",
    });
    const field = (title: string, reason: string) =>
      refusalOf(withdraw(t.clients, { sessionId, title, reason }));
    expectRefusal(await field(" \t", ""), {
      message: "withdraw_suggestion: title must not be empty",
      code: Code.InvalidArgument,
      reason: RefusalReason.FIELD_EMPTY,
      field: "title",
      limit: 60,
      domain: "withdraw_suggestion",
    });
    expectRefusal(await field("x".repeat(61), ""), {
      message: "withdraw_suggestion: title must be at most 60 characters (got 61)",
      code: Code.InvalidArgument,
      reason: RefusalReason.FIELD_TOO_LONG,
      field: "title",
      limit: 60,
      got: 61,
      domain: "withdraw_suggestion",
    });
    expectRefusal(await field("Write the docs", "  "), {
      message: WITHDRAW_TEXT.empty("reason"),
      code: Code.InvalidArgument,
      reason: RefusalReason.FIELD_EMPTY,
      field: "reason",
      limit: 240,
      domain: "withdraw_suggestion",
    });
    expectRefusal(await field("Write the docs", ` ${"🚀".repeat(241)} `), {
      message: WITHDRAW_TEXT.tooLong("reason", 240, 241),
      code: Code.InvalidArgument,
      reason: RefusalReason.FIELD_TOO_LONG,
      field: "reason",
      limit: 240,
      got: 241,
      domain: "withdraw_suggestion",
    });
    // 60 emoji fit the title's limit: the field check passes and the lookup refuses.
    expectNoOpenOffer(await field("🚀".repeat(60), "r"), "🚀".repeat(60));
    expect(await logRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test("a malformed request is INVALID_ARGUMENT, never a refusal", async () => {
    const noContext = await failureOf(
      t.clients.suggestions.withdrawSuggestion({ args: { title: "a", reason: "b" } }),
    );
    expect([Code[noContext.code], noContext.message]).toEqual([
      "InvalidArgument",
      "context is required",
    ]);
    const bad = await failureOf(withdraw(t.clients, { sessionId: "{bad}*", title: "a" }));
    expect(Code[bad.code]).toBe("InvalidArgument");
  });
});
