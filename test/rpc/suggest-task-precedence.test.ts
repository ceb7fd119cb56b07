import { beforeAll, describe, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { newChat, offer, offeredRecords, REFUSAL_TEXT, refusalOf } from "../support/suggest.js";

/*
 * suggest_task's refusals when several rules apply: the check order of docs/contract.md.
 * Each rule alone: test/rpc/suggest-task-rules.test.ts.
 */

const t = useTestServer();
let store: SuggestionStore;
beforeAll(() => {
  store = new SuggestionStore(t.redis);
});

/** A fresh chat in a normal folder of a workspace. */
const chat = (init: { folder?: FolderKind } = {}) => newChat(t.clients, init);

describe("precedence when several rules apply", () => {
  test("role, then session, then folder, then turn", async () => {
    const scheduled = await chat({ folder: FolderKind.SCHEDULED_TASK });
    for (const role of [AgentRole.HELPER, AgentRole.UNSPECIFIED, 99 as AgentRole]) {
      const all = { role, turnId: "", title: "" };
      for (const sessionId of ["", uniqueId("unknown"), scheduled]) {
        expect((await refusalOf(offer(t.clients, { sessionId, ...all }))).message).toBe(
          REFUSAL_TEXT.helper,
        );
      }
    }
    expect(
      (await refusalOf(offer(t.clients, { sessionId: "", turnId: "", title: "" }))).message,
    ).toBe(REFUSAL_TEXT.noSession);
    expect(
      (await refusalOf(offer(t.clients, { sessionId: scheduled, turnId: "", title: "" }))).message,
    ).toBe(REFUSAL_TEXT.scheduled);
    const normal = await chat();
    expect(
      (await refusalOf(offer(t.clients, { sessionId: normal, turnId: "", title: "" }))).message,
    ).toBe(REFUSAL_TEXT.noTurn);
  });

  test("lifetime, then open, then turn, then fields", async () => {
    // 7 dismissed and 3 open: both the lifetime and the open ceiling apply.
    const full = await chat();
    for (let i = 0; i < 7; i++) {
      const res = await offer(t.clients, { sessionId: full, turnId: `t${i}` });
      await store.settle(full, res.suggestion?.id ?? "", "dismissed");
    }
    for (let i = 7; i < 10; i++) await offer(t.clients, { sessionId: full, turnId: `t${i}` });
    const bad = { turnId: "t9", title: "", tldr: "x".repeat(300) };
    expect((await refusalOf(offer(t.clients, { sessionId: full, ...bad }))).message).toBe(
      REFUSAL_TEXT.lifetime,
    );

    const threeOpen = await chat();
    for (let i = 0; i < 3; i++) await offer(t.clients, { sessionId: threeOpen, turnId: `t${i}` });
    expect(
      (await refusalOf(offer(t.clients, { sessionId: threeOpen, turnId: "t0", title: "" })))
        .message,
    ).toBe(REFUSAL_TEXT.open);

    const oneOpen = await chat();
    await offer(t.clients, { sessionId: oneOpen, turnId: "t0" });
    expect(
      (await refusalOf(offer(t.clients, { sessionId: oneOpen, turnId: "t0", title: "" }))).message,
    ).toBe(REFUSAL_TEXT.turn);
  });

  test("fields in the order title, tldr, brief; empty before too long", async () => {
    const sessionId = await chat();
    const cases: [Parameters<typeof offer>[1], string][] = [
      [
        { sessionId, title: "", tldr: "x".repeat(241), brief: "" },
        "suggest_task: title must not be empty",
      ],
      [
        { sessionId, title: "x".repeat(61), tldr: "", brief: "" },
        "suggest_task: title must be at most 60 characters (got 61)",
      ],
      [{ sessionId, tldr: "", brief: "x".repeat(4001) }, "suggest_task: tldr must not be empty"],
      [
        { sessionId, tldr: "x".repeat(241), brief: "" },
        "suggest_task: tldr must be at most 240 characters (got 241)",
      ],
      [{ sessionId, brief: "   " }, "suggest_task: brief must not be empty"],
    ];
    for (const [input, message] of cases) {
      expect((await refusalOf(offer(t.clients, input))).message).toBe(message);
    }
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(0);
  });
});
