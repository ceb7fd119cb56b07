import { Code } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  ApprovalPolicy,
  FolderKind,
  MessageAuthor,
  Permission,
  SandboxMode,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { EmbeddedChatHost } from "../../server/host/embedded-host.js";
import { embeddedChatId } from "../../server/host/embedded-ids.js";
import { connectErrorOf, putSession, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { keysOf } from "../support/suggest.js";

const t = useTestServer();

const settings = {
  model: "m-1",
  permission: Permission.DEFAULT,
  sandbox: SandboxMode.WORKSPACE_WRITE,
  approval: ApprovalPolicy.ON_REQUEST,
};

/** Creates a chat under a fresh key; answers the key and the chat id. */
async function newChat(title = "A chat") {
  const key = uniqueId("key");
  const origin = { sessionId: uniqueId(), suggestionId: "sug-1" };
  const { chatId } = await t.clients.host.createChat({
    idempotencyKey: key,
    workspaceId: "ws-7",
    title,
    settings,
    origin,
  });
  return { key, chatId, origin };
}

describe("CreateChat", () => {
  test("the same key answers the same chat, even 20 calls at once; another key another chat", async () => {
    const key = uniqueId("key");
    const request = { idempotencyKey: key, workspaceId: "ws-7", title: "T", settings };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => t.clients.host.createChat(request)),
    );
    const ids = new Set(answers.map((a) => a.chatId));
    expect(ids.size).toBe(1);
    const [chatId] = ids;
    expect(chatId).toBe(embeddedChatId(key));
    expect((await t.clients.host.createChat(request)).chatId).toBe(chatId);
    const other = await t.clients.host.createChat({ ...request, idempotencyKey: uniqueId("key") });
    expect(other.chatId).not.toBe(chatId);
  });

  test("the chat is also a session: its workspace, a normal folder and its settings", async () => {
    const { chatId, origin } = await newChat("Write the docs");
    const { session } = await t.clients.host.getSession({ sessionId: chatId });
    expect(session).toMatchObject({
      sessionId: chatId,
      workspaceId: "ws-7",
      folder: FolderKind.NORMAL,
      settings: { presetId: "", ...settings },
    });
    const { chat } = await t.clients.local.getChat({ chatId });
    expect(chat).toMatchObject({
      chatId,
      workspaceId: "ws-7",
      title: "Write the docs",
      settings,
      origin,
      messages: [],
    });
  });

  test("a retried CreateChat changes nothing, not even what PutSession set since", async () => {
    const { key, chatId } = await newChat();
    await putSession(t.clients, { sessionId: chatId, workspaceId: "ws-8" });
    await t.clients.host.createChat({ idempotencyKey: key, workspaceId: "ws-9", title: "Other" });
    const { chat } = await t.clients.local.getChat({ chatId });
    expect(chat).toMatchObject({ workspaceId: "ws-8", title: "A chat" });
  });

  test("every key it writes carries the chat's hash tag", async () => {
    const { chatId } = await newChat();
    await t.clients.host.postMessage({
      idempotencyKey: "k",
      chatId,
      text: "hi",
      author: MessageAuthor.PERSON,
    });
    const keys = await keysOf(t.redis, chatId);
    expect(keys.sort()).toEqual(
      [
        `host:{${chatId}}:chat`,
        `host:{${chatId}}:message-ids`,
        `host:{${chatId}}:messages`,
        `host:{${chatId}}:session`,
      ].sort(),
    );
  });

  test.each([
    ["an empty key", { idempotencyKey: "" }, "idempotency_key is required"],
    [
      "a key with a space",
      { idempotencyKey: "a b" },
      "idempotency_key must be 1 to 256 printable ASCII characters without spaces",
    ],
    [
      "a key of 257 characters",
      { idempotencyKey: "k".repeat(257) },
      "idempotency_key must be 1 to 256 printable ASCII characters without spaces",
    ],
    ["no workspace", { workspaceId: "" }, "workspace_id is required"],
    [
      "a malformed workspace",
      { workspaceId: "ws 1" },
      "workspace_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
    [
      "a malformed origin",
      { origin: { sessionId: "{x}", suggestionId: "" } },
      "origin.session_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
  ])("%s is INVALID_ARGUMENT", async (_, change, message) => {
    const err = await connectErrorOf(
      t.clients.host.createChat({
        idempotencyKey: uniqueId("key"),
        workspaceId: "ws-1",
        title: "T",
        ...change,
      }),
    );
    expect(Code[err.code]).toBe("InvalidArgument");
    expect(err.rawMessage).toBe(message);
  });
});

describe("createSession", () => {
  test("creates an unknown session; one the host has already is left as it is", async () => {
    const host = new EmbeddedChatHost(t.redis);
    const sessionId = uniqueId();
    const made = await host.createSession({ sessionId, workspaceId: "ws-1" });
    expect(made?.session?.workspaceId).toBe("ws-1");
    expect(await host.createSession({ sessionId, workspaceId: "ws-2" })).toBeUndefined();
    const { session } = await t.clients.host.getSession({ sessionId });
    expect(session?.workspaceId).toBe("ws-1");
    // A started chat is a session too: it is not replaced either.
    const { chatId } = await newChat();
    expect(await host.createSession({ sessionId: chatId, workspaceId: "ws-2" })).toBeUndefined();
    expect((await t.clients.host.getSession({ sessionId: chatId })).session?.workspaceId).toBe(
      "ws-7",
    );
  });
});

describe("PostMessage", () => {
  test("the same key posts once and answers the same message id; another key posts again", async () => {
    const { chatId } = await newChat();
    const post = (key: string, text: string) =>
      t.clients.host.postMessage({
        idempotencyKey: key,
        chatId,
        text,
        author: MessageAuthor.SUGGESTION,
        origin: { sessionId: "s-1", suggestionId: "g-1" },
      });
    const answers = await Promise.all(Array.from({ length: 10 }, () => post("brief", "Do it")));
    expect(new Set(answers.map((a) => a.messageId)).size).toBe(1);
    const second = await post("other", "More");
    const { chat } = await t.clients.local.getChat({ chatId });
    expect(chat?.messages.map((m) => [m.messageId, m.author, m.text])).toEqual([
      [answers[0]?.messageId, MessageAuthor.SUGGESTION, "Do it"],
      [second.messageId, MessageAuthor.SUGGESTION, "More"],
    ]);
    expect(chat?.messages[0]?.origin).toMatchObject({ sessionId: "s-1", suggestionId: "g-1" });
  });

  test("posts to a session put with PutSession too (chats and sessions share one id space)", async () => {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    await t.clients.host.postMessage({
      idempotencyKey: "k1",
      chatId: sessionId,
      text: "hello",
      author: MessageAuthor.PERSON,
    });
    const { chat } = await t.clients.local.getChat({ chatId: sessionId });
    expect(chat).toMatchObject({ chatId: sessionId, workspaceId: "ws-1", title: "" });
    expect(chat?.messages.map((m) => m.text)).toEqual(["hello"]);
  });

  test("an unknown chat is NOT_FOUND and nothing is written", async () => {
    const chatId = uniqueId("chat");
    const err = await connectErrorOf(
      t.clients.host.postMessage({
        idempotencyKey: "k",
        chatId,
        text: "x",
        author: MessageAuthor.PERSON,
      }),
    );
    expect(Code[err.code]).toBe("NotFound");
    expect(err.rawMessage).toBe(`no chat "${chatId}"`);
    expect(await keysOf(t.redis, chatId)).toEqual([]);
  });

  test.each([
    ["an empty key", { idempotencyKey: "" }, "idempotency_key is required"],
    [
      "a malformed chat id",
      { chatId: "a*b" },
      "chat_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
    [
      "no author",
      { author: MessageAuthor.UNSPECIFIED },
      "author must be MESSAGE_AUTHOR_PERSON, MESSAGE_AUTHOR_AGENT or MESSAGE_AUTHOR_SUGGESTION",
    ],
  ])("%s is INVALID_ARGUMENT", async (_, change, message) => {
    const err = await connectErrorOf(
      t.clients.host.postMessage({
        idempotencyKey: "k",
        chatId: "chat-1",
        text: "x",
        author: MessageAuthor.PERSON,
        ...change,
      }),
    );
    expect(Code[err.code]).toBe("InvalidArgument");
    expect(err.rawMessage).toBe(message);
  });
});

describe("GetChat", () => {
  test("an unknown chat is NOT_FOUND; a malformed id INVALID_ARGUMENT", async () => {
    const chatId = uniqueId("chat");
    const missing = await connectErrorOf(t.clients.local.getChat({ chatId }));
    expect(Code[missing.code]).toBe("NotFound");
    expect(missing.rawMessage).toBe(`no chat "${chatId}"`);
    const bad = await connectErrorOf(t.clients.local.getChat({ chatId: "" }));
    expect(Code[bad.code]).toBe("InvalidArgument");
  });
});

describe("CreateGoal", () => {
  test("refuses a suggestion's or the agent's message; accepts the person's own", async () => {
    const { chatId } = await newChat();
    const post = async (author: MessageAuthor) =>
      (
        await t.clients.host.postMessage({
          idempotencyKey: `k-${author}`,
          chatId,
          text: "Make a goal of this",
          author,
        })
      ).messageId;
    for (const author of [MessageAuthor.SUGGESTION, MessageAuthor.AGENT]) {
      const messageId = await post(author);
      const err = await connectErrorOf(t.clients.local.createGoal({ chatId, messageId }));
      expect(Code[err.code]).toBe("PermissionDenied");
      expect(err.rawMessage).toBe(
        `message "${messageId}" is not the person's own instruction; ask the person first`,
      );
      expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({
        domain: "chat-host",
        reason: "NOT_PERSONS_INSTRUCTION",
        metadata: { chatId, messageId, author: MessageAuthor[author] },
      });
    }
    const personal = await post(MessageAuthor.PERSON);
    const { goalId } = await t.clients.local.createGoal({ chatId, messageId: personal });
    expect(goalId).toMatch(/^goal-[0-9a-f]{32}$/);
    expect((await t.clients.local.createGoal({ chatId, messageId: personal })).goalId).toBe(goalId);
  });

  test("an unknown chat or message is NOT_FOUND", async () => {
    const { chatId } = await newChat();
    const noMessage = await connectErrorOf(
      t.clients.local.createGoal({ chatId, messageId: "msg-x" }),
    );
    expect(Code[noMessage.code]).toBe("NotFound");
    expect(noMessage.rawMessage).toBe(`no message "msg-x" in chat "${chatId}"`);
    const noChat = await connectErrorOf(
      t.clients.local.createGoal({ chatId: uniqueId("chat"), messageId: "msg-x" }),
    );
    expect(Code[noChat.code]).toBe("NotFound");
  });
});
