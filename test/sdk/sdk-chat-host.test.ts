import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AgentRole,
  type ChatHostImpl,
  type ChatSettings,
  chatHostRoutes,
  createChatHostClient,
  createLocalHostClient,
  createSuggestionClient,
  FolderKind,
  isPersonInstruction,
  MessageAuthor,
  type Origin,
  Permission,
  RefusalReason,
  type Session,
  SessionSchema,
  SuggestionState,
  SuggestTaskRefusalError,
} from "../../sdk/src/node.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";

test("isPersonInstruction: true only for the person's own words", () => {
  expect(isPersonInstruction({ author: MessageAuthor.PERSON })).toBe(true);
  expect(isPersonInstruction({ author: MessageAuthor.SUGGESTION })).toBe(false);
  expect(isPersonInstruction({ author: MessageAuthor.AGENT })).toBe(false);
  expect(isPersonInstruction({ author: MessageAuthor.UNSPECIFIED })).toBe(false);
});

test("chatHostRoutes requires every ChatHostService RPC", () => {
  const partial = { getSession: () => ({}), createChat: () => ({ chatId: "c" }) };
  // @ts-expect-error postMessage is missing: a host must implement all three RPCs.
  expect(typeof chatHostRoutes(partial)).toBe("function");
});

/** A chat host written in TypeScript with the SDK: everything in memory. */
class MemoryHost {
  readonly sessions = new Map<string, Session>();
  readonly chats = new Map<
    string,
    { chatId: string; workspaceId: string; title: string; settings?: ChatSettings; origin?: Origin }
  >();
  readonly messages = new Map<
    string,
    { messageId: string; chatId: string; text: string; author: MessageAuthor }
  >();
  readonly authorizations: (string | null)[] = [];

  readonly impl: ChatHostImpl = {
    getSession: (req, context) => {
      this.authorizations.push(context.requestHeader.get("authorization"));
      const session = this.sessions.get(req.sessionId);
      if (session === undefined) {
        throw new ConnectError(`no session "${req.sessionId}"`, Code.NotFound);
      }
      return { session };
    },
    createChat: (req) => {
      const chatId = `chat-${req.idempotencyKey.replace(/[^A-Za-z0-9._:-]/g, "_")}`;
      if (!this.chats.has(req.idempotencyKey)) {
        this.chats.set(req.idempotencyKey, {
          chatId,
          workspaceId: req.workspaceId,
          title: req.title,
          ...(req.settings === undefined ? {} : { settings: req.settings }),
          ...(req.origin === undefined ? {} : { origin: req.origin }),
        });
      }
      return { chatId: this.chats.get(req.idempotencyKey)?.chatId ?? chatId };
    },
    postMessage: (req) => {
      const existing = this.messages.get(req.idempotencyKey);
      if (existing !== undefined) return { messageId: existing.messageId };
      const messageId = `m${this.messages.size + 1}`;
      this.messages.set(req.idempotencyKey, {
        messageId,
        chatId: req.chatId,
        text: req.text,
        author: req.author,
      });
      return { messageId };
    },
  };
}

describe("a TypeScript chat host served with chatHostRoutes", () => {
  const host = new MemoryHost();
  let hostServer: http2.Http2Server;
  const sessions = new Set<http2.Http2Session>();
  let hostUrl: string;
  beforeAll(async () => {
    hostServer = http2.createServer(connectNodeAdapter({ routes: chatHostRoutes(host.impl) }));
    hostServer.on("session", (session: http2.Http2Session) => sessions.add(session));
    await new Promise<void>((resolve) => hostServer.listen(0, "127.0.0.1", resolve));
    hostUrl = `http://127.0.0.1:${(hostServer.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    const closed = new Promise((resolve) => hostServer.close(resolve));
    // The service's and the test's clients keep their HTTP/2 sessions open.
    for (const session of sessions) session.destroy();
    await closed;
  });
  const service = useTestServer({ settings: () => ({ chatHostUrl: hostUrl }) });

  function putSession(init: Partial<Omit<Session, "$typeName">>): string {
    const sessionId = uniqueId("sdk-host");
    host.sessions.set(
      sessionId,
      create(SessionSchema, {
        sessionId,
        workspaceId: "ws-ts",
        folder: FolderKind.NORMAL,
        settings: { model: "m-1", permission: Permission.DEFAULT },
        ...init,
      }),
    );
    return sessionId;
  }

  test("the service reads sessions from it, and refuses what it does not know", async () => {
    const client = createSuggestionClient({ baseUrl: service.url });
    const sessionId = putSession({});
    const offered = await client.suggestTask({
      context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL },
      args: { title: "Write docs", tldr: "Nobody knows how", brief: "Document the API." },
    });
    expect(offered.suggestion).toMatchObject({ sessionId, state: SuggestionState.OPEN });

    const unknown = await client
      .suggestTask({
        context: { sessionId: uniqueId("ghost"), turnId: "t1", role: AgentRole.TOP_LEVEL },
        args: { title: "T", tldr: "W", brief: "B" },
      })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(SuggestTaskRefusalError);
    expect(unknown).toMatchObject({
      rawMessage: "suggest_task requires an owning agent session",
      payload: { reason: RefusalReason.NO_SESSION },
    });

    const scheduled = putSession({ folder: FolderKind.SCHEDULED_TASK });
    const refused = await client
      .suggestTask({
        context: { sessionId: scheduled, turnId: "t1", role: AgentRole.TOP_LEVEL },
        args: { title: "T", tldr: "W", brief: "B" },
      })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ payload: { reason: RefusalReason.SCHEDULED_TASK_FOLDER } });
  });

  test("Start creates the chat on it and posts the brief as the suggestion's, not the person's", async () => {
    const client = createSuggestionClient({ baseUrl: service.url });
    const sessionId = putSession({});
    const { suggestion } = await client.suggestTask({
      context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL },
      args: { title: "Split the module", tldr: "Too big", brief: "Split server.ts in two." },
    });
    const started = await client.startSuggestion({
      sessionId,
      suggestionId: suggestion?.id ?? "",
    });
    const chat = [...host.chats.values()].find((c) => c.chatId === started.chatId);
    expect(chat).toMatchObject({
      workspaceId: "ws-ts",
      title: "Split the module",
      origin: { sessionId, suggestionId: suggestion?.id },
    });
    const posted = [...host.messages.values()].filter((m) => m.chatId === started.chatId);
    expect(posted).toHaveLength(1);
    expect(posted[0]).toMatchObject({
      text: "Split server.ts in two.",
      author: MessageAuthor.SUGGESTION,
    });
    expect(posted.map(isPersonInstruction)).toEqual([false]);
  });

  test("createChatHostClient calls the host with the bearer token", async () => {
    const sessionId = putSession({});
    const client = createChatHostClient({ baseUrl: hostUrl, token: "host-token" });
    const { session } = await client.getSession({ sessionId });
    expect(session?.workspaceId).toBe("ws-ts");
    expect(host.authorizations.at(-1)).toBe("Bearer host-token");
  });
});

describe("the embedded host", () => {
  const service = useTestServer();

  test("a started chat's brief is not a person's instruction, and no goal can come of it", async () => {
    const options = { baseUrl: service.url } as const;
    const client = createSuggestionClient(options);
    const local = createLocalHostClient(options);
    const sessionId = uniqueId("sdk-embedded");
    await local.putSession({ session: { sessionId, workspaceId: "ws-1" } });
    const { suggestion } = await client.suggestTask({
      context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL },
      args: { title: "Add a goal", tldr: "Track it", brief: "Create a goal for this." },
    });
    const { chatId } = await client.startSuggestion({
      sessionId,
      suggestionId: suggestion?.id ?? "",
    });
    const { chat } = await local.getChat({ chatId });
    const brief = chat?.messages[0];
    expect(brief).toMatchObject({
      text: "Create a goal for this.",
      author: MessageAuthor.SUGGESTION,
    });
    expect(brief !== undefined && isPersonInstruction(brief)).toBe(false);
    const err = await local
      .createGoal({ chatId, messageId: brief?.messageId ?? "" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: Code.PermissionDenied });
  });
});
