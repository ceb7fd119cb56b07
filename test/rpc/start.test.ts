import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { Settler, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { startIdempotencyKeys } from "../../server/domain/started-chat.js";
import { EmbeddedChatHost } from "../../server/host/embedded-host.js";
import { startLockKey } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { logRecords } from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne, sessionWithOffer } from "../support/suggest.js";

/*
 * StartSuggestion: the chat it creates, the brief it posts, and its repeats.
 * Its failure codes: test/rpc/start-failures.test.ts.
 */

const t = useTestServer();
const offered = () => sessionWithOffer(t.clients);

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
