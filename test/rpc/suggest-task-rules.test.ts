import { Code } from "@connectrpc/connect";
import { beforeAll, describe, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  AgentRole,
  RefusalReason,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import {
  expectRefusal,
  newChat,
  offer,
  offeredRecords,
  REFUSAL_TEXT,
  refusalOf,
  successText,
} from "../support/suggest.js";

/*
 * suggest_task's rules: a recorded offer, and every refusal of docs/contract.md with its
 * text, code and details. When several apply: test/rpc/suggest-task-precedence.test.ts.
 */

const t = useTestServer();
let store: SuggestionStore;
beforeAll(() => {
  store = new SuggestionStore(t.redis);
});

/** A fresh chat in a normal folder of a workspace. */
const chat = (init: { folder?: FolderKind } = {}) => newChat(t.clients, init);

describe("a recorded offer", () => {
  test("answers the success line and is on the stream, trimmed", async () => {
    const sessionId = await chat();
    const res = await offer(t.clients, {
      sessionId,
      turnId: "turn-a",
      toolCallId: "call-a",
      title: "  Fix the flaky login test\t",
      tldr: "\n It fails one run in ten. ",
      brief: "\u00a0Find why login.test.ts fails intermittently and fix it.\u2003",
    });
    expect(res.result).toBe(successText("Fix the flaky login test"));
    expect(res.suggestion).toMatchObject({
      sessionId,
      turnId: "turn-a",
      title: "Fix the flaky login test",
      tldr: "It fails one run in ten.",
      brief: "Find why login.test.ts fails intermittently and fix it.",
      state: SuggestionState.OPEN,
      chatId: "",
      workspaceId: "ws-1",
    });
    expect(res.suggestion?.id).not.toBe("");
    expect(res.suggestion?.offeredAt).toBeDefined();
    expect(res.suggestion?.settledAt).toBeUndefined();
    const records = await offeredRecords(t.redis, sessionId);
    expect(records).toEqual([
      {
        type: "offered",
        id: res.suggestion?.id,
        turn: "turn-a",
        call: "call-a",
        title: "Fix the flaky login test",
        tldr: "It fails one run in ten.",
        brief: "Find why login.test.ts fails intermittently and fix it.",
        time: expect.stringMatching(/^\d{13}$/),
        ws: "ws-1",
        nt: "fix the flaky login test",
      },
    ]);
  });

  test("a title of 60 code points with emoji is accepted; 61 is refused with (got 61)", async () => {
    const sessionId = await chat();
    const sixty = `${"🚀".repeat(30)}${"a".repeat(29)}👍`;
    expect(sixty.length).toBe(91); // UTF-16 units: the limit counts code points, not these
    const res = await offer(t.clients, { sessionId, title: sixty });
    expect(res.result).toBe(successText(sixty));
    expect(res.suggestion?.title).toBe(sixty);

    const sixtyOne = `${sixty}🎉`;
    expectRefusal(await refusalOf(offer(t.clients, { sessionId, title: sixtyOne })), {
      message: "suggest_task: title must be at most 60 characters (got 61)",
      code: Code.InvalidArgument,
      reason: RefusalReason.FIELD_TOO_LONG,
      field: "title",
      limit: 60,
      got: 61,
    });
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test("white space around a field is trimmed before it is counted", async () => {
    const sessionId = await chat();
    const title = "t".repeat(60);
    const res = await offer(t.clients, { sessionId, title: `   ${title}  \n` });
    expect(res.suggestion?.title).toBe(title);
    const brief = "b".repeat(4000);
    const res2 = await offer(t.clients, { sessionId, brief: `\t${brief}\u3000` });
    expect(res2.suggestion?.brief).toBe(brief);
  });
});

describe("every refusal of the contract", () => {
  test("a helper or a forked helper", async () => {
    const sessionId = await chat();
    for (const role of [AgentRole.HELPER, AgentRole.FORKED_HELPER]) {
      expectRefusal(await refusalOf(offer(t.clients, { sessionId, role })), {
        message: REFUSAL_TEXT.helper,
        code: Code.PermissionDenied,
        reason: RefusalReason.NOT_TOP_LEVEL,
      });
    }
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(0);
  });

  test.each([
    ["unset (AGENT_ROLE_UNSPECIFIED, 0)", AgentRole.UNSPECIFIED],
    ["unknown to this build (99)", 99 as AgentRole],
  ])("a role %s is a helper's", async (_, role) => {
    const sessionId = await chat();
    expectRefusal(await refusalOf(offer(t.clients, { sessionId, role })), {
      message: REFUSAL_TEXT.helper,
      code: Code.PermissionDenied,
      reason: RefusalReason.NOT_TOP_LEVEL,
    });
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(0);
  });

  test("no chat behind the call: empty session id, or one the host does not know", async () => {
    for (const sessionId of ["", uniqueId("unknown")]) {
      expectRefusal(await refusalOf(offer(t.clients, { sessionId })), {
        message: REFUSAL_TEXT.noSession,
        code: Code.FailedPrecondition,
        reason: RefusalReason.NO_SESSION,
      });
    }
  });

  test("a chat in a scheduled task's folder", async () => {
    const sessionId = await chat({ folder: FolderKind.SCHEDULED_TASK });
    expectRefusal(await refusalOf(offer(t.clients, { sessionId })), {
      message: REFUSAL_TEXT.scheduled,
      code: Code.FailedPrecondition,
      reason: RefusalReason.SCHEDULED_TASK_FOLDER,
    });
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(0);
  });

  test("no open turn", async () => {
    const sessionId = await chat();
    expectRefusal(await refusalOf(offer(t.clients, { sessionId, turnId: "" })), {
      message: REFUSAL_TEXT.noTurn,
      code: Code.FailedPrecondition,
      reason: RefusalReason.NO_OPEN_TURN,
    });
  });

  test("ten offers already made in the chat", async () => {
    const sessionId = await chat();
    for (let i = 0; i < 10; i++) {
      const res = await offer(t.clients, { sessionId });
      await store.settle(sessionId, res.suggestion?.id ?? "", "dismissed");
    }
    expectRefusal(await refusalOf(offer(t.clients, { sessionId })), {
      message: REFUSAL_TEXT.lifetime,
      code: Code.ResourceExhausted,
      reason: RefusalReason.LIFETIME_LIMIT,
      limit: 10,
    });
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(10);
  });

  test("three offers already waiting", async () => {
    const sessionId = await chat();
    for (let i = 0; i < 3; i++) await offer(t.clients, { sessionId });
    expectRefusal(await refusalOf(offer(t.clients, { sessionId })), {
      message: REFUSAL_TEXT.open,
      code: Code.ResourceExhausted,
      reason: RefusalReason.OPEN_LIMIT,
      limit: 3,
    });
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(3);
  });

  test("a second offer in one turn", async () => {
    const sessionId = await chat();
    await offer(t.clients, { sessionId, turnId: "t" });
    expectRefusal(await refusalOf(offer(t.clients, { sessionId, turnId: "t" })), {
      message: REFUSAL_TEXT.turn,
      code: Code.ResourceExhausted,
      reason: RefusalReason.TURN_LIMIT,
      limit: 1,
    });
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test.each([
    ["title", 60],
    ["tldr", 240],
    ["brief", 4000],
  ] as const)("%s empty, white space only, and over its limit of %i", async (field, limit) => {
    const sessionId = await chat();
    for (const value of ["", " \t\n\u00a0 "]) {
      expectRefusal(await refusalOf(offer(t.clients, { sessionId, [field]: value })), {
        message: `suggest_task: ${field} must not be empty`,
        code: Code.InvalidArgument,
        reason: RefusalReason.FIELD_EMPTY,
        field,
        limit,
      });
    }
    const tooLong = ` ${"é".repeat(limit + 5)} `;
    expectRefusal(await refusalOf(offer(t.clients, { sessionId, [field]: tooLong })), {
      message: `suggest_task: ${field} must be at most ${limit} characters (got ${limit + 5})`,
      code: Code.InvalidArgument,
      reason: RefusalReason.FIELD_TOO_LONG,
      field,
      limit,
      got: limit + 5,
    });
    expect(await offeredRecords(t.redis, sessionId)).toHaveLength(0);
  });
});
