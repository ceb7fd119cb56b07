import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { FolderKind, MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  Settler,
  SuggestionErrorSchema,
  SuggestionState,
  WorkspaceMissingReason,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { startIdempotencyKeys } from "../../server/domain/started-chat.js";
import { EmbeddedChatHost, embeddedChatId } from "../../server/host/embedded-host.js";
import { hostKeys, startLockKey } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { putSession, uniqueId } from "../support/harness.js";
import {
  expectNotFound,
  expectNotOpen,
  expectOpenLimit,
  failureOf,
  logRecords,
} from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const t = useTestServer();

/** A session in workspace ws-1 with one offer; answers both ids. */
async function offered(title = "Write the migration guide") {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const suggestion = await offerOne(t.clients, sessionId, title);
  return { sessionId, suggestionId: suggestion.id, suggestion };
}

describe("a Start", () => {
  test("creates the chat, records started with its id, and posts the brief as the suggestion's", async () => {
    const { sessionId, suggestionId } = await offered();
    const before = Date.now();
    const res = await t.clients.suggestions.startSuggestion({ sessionId, suggestionId });
    expect(res.chatId).toMatch(/^chat-[0-9a-f]{32}$/);
    expect(res.suggestion).toMatchObject({
      id: suggestionId,
      sessionId,
      title: "Write the migration guide",
      state: SuggestionState.STARTED,
      chatId: res.chatId,
    });
    const settledAt = res.suggestion?.settledAt;
    expect(settledAt && timestampMs(settledAt)).toBeGreaterThan(before - 5_000);

    const { chat } = await t.clients.local.getChat({ chatId: res.chatId });
    expect(chat).toMatchObject({
      chatId: res.chatId,
      workspaceId: "ws-1",
      title: "Write the migration guide",
      origin: { sessionId, suggestionId },
    });
    expect(chat?.messages).toHaveLength(1);
    expect(chat?.messages[0]).toMatchObject({
      author: MessageAuthor.SUGGESTION,
      text: "Do the follow-up.",
      origin: { sessionId, suggestionId },
    });

    const records = await logRecords(t.redis, sessionId);
    expect(records.filter((r) => r.type === "settled")).toEqual([
      expect.objectContaining({
        id: suggestionId,
        outcome: "started",
        chat: res.chatId,
        by: "person",
      }),
    ]);
    expect(res.suggestion?.settledBy).toBe(Settler.PERSON);
    expect(await t.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
    const { settled } = await t.clients.suggestions.listSuggestions({ sessionId });
    expect(settled.map((s) => [s.id, s.state, s.chatId])).toEqual([
      [suggestionId, SuggestionState.STARTED, res.chatId],
    ]);
  });

  test("repeated, it answers the same chat; the chat keeps one brief and the log one settlement", async () => {
    const { sessionId, suggestionId } = await offered();
    const first = await t.clients.suggestions.startSuggestion({ sessionId, suggestionId });
    const again = await Promise.all([
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
    ]);
    for (const res of again) {
      expect(res.chatId).toBe(first.chatId);
      expect(res.suggestion?.state).toBe(SuggestionState.STARTED);
    }
    const { chat } = await t.clients.local.getChat({ chatId: first.chatId });
    expect(chat?.messages).toHaveLength(1);
    const settled = (await logRecords(t.redis, sessionId)).filter((r) => r.type === "settled");
    expect(settled).toHaveLength(1);
  });

  test("repeated after the brief never arrived, it posts the brief, once", async () => {
    // The state a crash between recording `started` and posting leaves behind.
    const { sessionId, suggestionId } = await offered();
    const host = new EmbeddedChatHost(t.redis);
    const { chatId } = await host.createChat({
      idempotencyKey: startIdempotencyKeys(sessionId, suggestionId).chat,
      workspaceId: "ws-1",
      title: "Write the migration guide",
    });
    await new SuggestionStore(t.redis).settle(sessionId, suggestionId, "started", chatId);
    expect((await host.getChat(chatId)).chat?.messages).toHaveLength(0);
    for (let i = 0; i < 2; i++) {
      const res = await t.clients.suggestions.startSuggestion({ sessionId, suggestionId });
      expect(res.chatId).toBe(chatId);
    }
    const messages = (await host.getChat(chatId)).chat?.messages ?? [];
    expect(messages.map((m) => [m.author, m.text])).toEqual([
      [MessageAuthor.SUGGESTION, "Do the follow-up."],
    ]);
  });

  test("the brief cannot make a goal, while the person's own message in that chat can", async () => {
    const { sessionId, suggestionId } = await offered();
    const { chatId } = await t.clients.suggestions.startSuggestion({ sessionId, suggestionId });
    const brief = (await t.clients.local.getChat({ chatId })).chat?.messages[0];
    const refused = await t.clients.local
      .createGoal({ chatId, messageId: brief?.messageId ?? "" })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(refused).toBeInstanceOf(ConnectError);
    expect(Code[(refused as ConnectError).code]).toBe("PermissionDenied");
    const { messageId } = await t.clients.host.postMessage({
      idempotencyKey: "person-1",
      chatId,
      text: "Yes, make that a goal",
      author: MessageAuthor.PERSON,
    });
    const { goalId } = await t.clients.local.createGoal({ chatId, messageId });
    expect(goalId).not.toBe("");
  });

  test("the started chat is itself a session that can offer and start suggestions", async () => {
    const { sessionId, suggestionId } = await offered();
    const { chatId } = await t.clients.suggestions.startSuggestion({ sessionId, suggestionId });
    const next = await offerOne(t.clients, chatId, "A follow-up of the follow-up");
    const res = await t.clients.suggestions.startSuggestion({
      sessionId: chatId,
      suggestionId: next.id,
    });
    expect(res.chatId).not.toBe(chatId);
    const { chat } = await t.clients.local.getChat({ chatId: res.chatId });
    expect(chat).toMatchObject({
      workspaceId: "ws-1",
      title: "A follow-up of the follow-up",
      origin: { sessionId: chatId, suggestionId: next.id },
    });
  });
});

describe("the failure codes", () => {
  /** Asserts workspace-missing for `sessionId` with `reason`. */
  async function expectWorkspaceMissing(
    call: Promise<unknown>,
    sessionId: string,
    reason: WorkspaceMissingReason,
    message: string,
  ) {
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError: ${String(err)}`);
    expect(err.rawMessage).toBe(message);
    expect(Code[err.code]).toBe("FailedPrecondition");
    const detail = err.findDetails(SuggestionErrorSchema)[0];
    expect(detail?.code).toBe("task-suggestion/workspace-missing");
    expect(detail?.payload).toEqual({
      case: "workspaceMissing",
      value: expect.objectContaining({ sessionId, reason }),
    });
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({
      domain: "task-suggestion",
      reason: "WORKSPACE_MISSING",
      metadata: { sessionId, reason: WorkspaceMissingReason[reason] },
    });
  }

  test("not-found: no suggestion with that id, for a known session and an unknown one", async () => {
    const { sessionId } = await offered();
    expectNotFound(
      await failureOf(t.clients.suggestions.startSuggestion({ sessionId, suggestionId: "nope" })),
      "nope",
    );
    expectNotFound(
      await failureOf(
        t.clients.suggestions.startSuggestion({ sessionId: uniqueId(), suggestionId: "nope" }),
      ),
      "nope",
    );
  });

  test.each([
    ["drafted", SuggestionState.DRAFTED],
    ["dismissed", SuggestionState.DISMISSED],
  ] as const)("not-open: a %s suggestion, nothing created or recorded", async (word, state) => {
    const { sessionId, suggestionId } = await offered();
    if (word === "drafted")
      await t.clients.suggestions.draftSuggestion({ sessionId, suggestionId });
    else await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId });
    const before = await logRecords(t.redis, sessionId);
    const f = await failureOf(t.clients.suggestions.startSuggestion({ sessionId, suggestionId }));
    expectNotOpen(f, suggestionId, state);
    expect(f.message).toBe(`suggestion "${suggestionId}" is ${word}`);
    expect(await logRecords(t.redis, sessionId)).toEqual(before);
    // Nothing was asked of the host: the chat this Start would have made does not exist.
    const chatId = embeddedChatId(startIdempotencyKeys(sessionId, suggestionId).chat);
    expect(await t.redis.exists(hostKeys(chatId).chat)).toBe(0);
  });

  test("workspace-missing: a session in no workspace", async () => {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId, workspaceId: "" });
    const { id } = await offerOne(t.clients, sessionId);
    await expectWorkspaceMissing(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId: id }),
      sessionId,
      WorkspaceMissingReason.NO_WORKSPACE,
      `session "${sessionId}" belongs to no workspace`,
    );
    expect((await logRecords(t.redis, sessionId)).map((r) => r.type)).toEqual(["offered"]);
  });

  test("workspace-missing: a session in a scheduled task's folder", async () => {
    const { sessionId, suggestionId } = await offered();
    await putSession(t.clients, { sessionId, folder: FolderKind.SCHEDULED_TASK });
    await expectWorkspaceMissing(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
      sessionId,
      WorkspaceMissingReason.SCHEDULED_TASK_FOLDER,
      `session "${sessionId}" runs in a scheduled task's folder`,
    );
    expect((await logRecords(t.redis, sessionId)).map((r) => r.type)).toEqual(["offered"]);
  });

  test("workspace-missing: an offer whose session the host no longer knows", async () => {
    const { sessionId, suggestionId } = await offered();
    await t.redis.del(`host:{${sessionId}}:session`);
    await expectWorkspaceMissing(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
      sessionId,
      WorkspaceMissingReason.NO_WORKSPACE,
      `session "${sessionId}" belongs to no workspace`,
    );
  });

  test("open-limit: restoring a dismissed suggestion with three open", async () => {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    const first = await offerOne(t.clients, sessionId, "First");
    await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: first.id });
    for (const title of ["Second", "Third", "Fourth"]) await offerOne(t.clients, sessionId, title);
    expectOpenLimit(
      await failureOf(
        t.clients.suggestions.restoreSuggestion({ sessionId, suggestionId: first.id }),
      ),
    );
    // Starting one of the three frees a place: the restore goes through, and the restored
    // suggestion starts like any open one.
    const { open } = await t.clients.suggestions.listSuggestions({ sessionId });
    await t.clients.suggestions.startSuggestion({ sessionId, suggestionId: open[0]?.id ?? "" });
    await t.clients.suggestions.restoreSuggestion({ sessionId, suggestionId: first.id });
    const res = await t.clients.suggestions.startSuggestion({ sessionId, suggestionId: first.id });
    expect(res.suggestion?.state).toBe(SuggestionState.STARTED);
  });

  test.each([
    ["an empty session id", { sessionId: "", suggestionId: "g" }, "session_id is required"],
    [
      "a malformed session id",
      { sessionId: "a b", suggestionId: "g" },
      "session_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
    ["an empty suggestion id", { sessionId: "s", suggestionId: "" }, "suggestion_id is required"],
    [
      "a malformed suggestion id",
      { sessionId: "s", suggestionId: "{x}" },
      "suggestion_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
  ])("%s is INVALID_ARGUMENT", async (_, request, message) => {
    const f = await failureOf(t.clients.suggestions.startSuggestion(request));
    expect(Code[f.code]).toBe("InvalidArgument");
    expect(f.message).toBe(message);
  });

  test("a refused Start leaves no lock behind", async () => {
    const { sessionId, suggestionId } = await offered();
    await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId });
    await failureOf(t.clients.suggestions.startSuggestion({ sessionId, suggestionId }));
    expect(await t.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
  });
});
