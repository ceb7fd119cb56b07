import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, test } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import {
  ChatHostService,
  FolderKind,
  LocalHostService,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { uniqueId } from "../support/harness.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";

const TOKENS = {
  agent: "agent-token-0123456789",
  app: "app-token-0123456789abc",
  "host-admin": "admin-token-0123456789",
} as const;

// A Redis of this file's own: "reaches Redis" is read off its command counter.
const own = useOwnRedis();
const t = useTestServer({
  redisUrl: () => own.url,
  settings: {
    authTokens: Object.entries(TOKENS).map(([role, token]) => ({
      role: role as keyof typeof TOKENS,
      token,
    })),
  },
});

function clientsWith(token: string | undefined) {
  const bearer: Interceptor = (next) => (req) => {
    if (token !== undefined) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = createGrpcTransport({ baseUrl: t.server.url, interceptors: [bearer] });
  return {
    suggestions: createClient(SuggestionService, transport),
    host: createClient(ChatHostService, transport),
    local: createClient(LocalHostService, transport),
    health: createClient(Health, transport),
  };
}

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "OK";
  } catch (err) {
    return Code[ConnectError.from(err).code];
  }
}

/** Commands the server sent to Redis, less the INFO that reads the counter. */
async function commandsProcessed(): Promise<number> {
  // The answer watch's PINGs (redis/answer-watch.ts) ask whether Redis answers; they
  // carry no call, so they are left out.
  const info = await t.redis.info("commandstats");
  return [...info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)]
    .filter((m) => m[1] !== "ping")
    .reduce((n, m) => n + Number(m[2]), 0);
}

/** One call of every guarded RPC, each answering its code for the given token. */
function everyCall(token: string | undefined, sessionId: string) {
  const c = clientsWith(token);
  const ids = { sessionId, suggestionId: "sg-1" };
  return {
    SuggestTask: () =>
      c.suggestions.suggestTask({
        context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
        args: { title: "T", tldr: "R", brief: "B" },
      }),
    ListSuggestions: () => c.suggestions.listSuggestions({ sessionId }),
    GetSuggestion: () => c.suggestions.getSuggestion(ids),
    StartSuggestion: () => c.suggestions.startSuggestion(ids),
    DraftSuggestion: () => c.suggestions.draftSuggestion(ids),
    DismissSuggestion: () => c.suggestions.dismissSuggestion(ids),
    RestoreSuggestion: () => c.suggestions.restoreSuggestion(ids),
    WatchSuggestions: async () => {
      for await (const _ of c.suggestions.watchSuggestions({ sessionId })) return;
    },
    // Allowed, it answers its NOT_FOUND refusal (no open offer titled "T").
    WithdrawSuggestion: () =>
      c.suggestions.withdrawSuggestion({
        context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
        args: { title: "T", reason: "R" },
      }),
    ListSettlements: () => c.suggestions.listSettlements({ sessionId, after: "" }),
    ListWorkspaceSuggestions: () => c.suggestions.listWorkspaceSuggestions({ workspaceId: "ws" }),
    WatchWorkspaceSuggestions: async () => {
      for await (const _ of c.suggestions.watchWorkspaceSuggestions({ workspaceId: "ws" })) return;
    },
    GetSession: () => c.host.getSession({ sessionId }),
    PutSession: () =>
      c.local.putSession({ session: { sessionId, workspaceId: "ws", folder: FolderKind.NORMAL } }),
    GetChat: () => c.local.getChat({ chatId: "chat-unknown" }),
    // Last: it erases the session's records, which the calls above read.
    DeleteSuggestions: () => c.suggestions.deleteSuggestions({ sessionId }),
  };
}

const ALLOWED: Record<keyof typeof TOKENS, readonly string[]> = {
  agent: ["SuggestTask", "WithdrawSuggestion", "ListSettlements"],
  app: [
    "ListSuggestions",
    "GetSuggestion",
    "StartSuggestion",
    "DraftSuggestion",
    "DismissSuggestion",
    "RestoreSuggestion",
    "WatchSuggestions",
    "ListSettlements",
    "ListWorkspaceSuggestions",
    "WatchWorkspaceSuggestions",
    "DeleteSuggestions",
  ],
  "host-admin": ["GetSession", "PutSession", "GetChat"],
};

describe("bearer tokens with a role each", () => {
  test("no token, or a wrong one: UNAUTHENTICATED, and nothing reaches Redis", async () => {
    for (const token of [undefined, "not-a-token-at-all-00", ""]) {
      const calls = everyCall(token, uniqueId());
      const before = await commandsProcessed();
      for (const [name, call] of Object.entries(calls)) {
        expect([name, await codeOf(call())]).toEqual([name, "Unauthenticated"]);
      }
      expect(await commandsProcessed()).toBe(before + 1);
    }
  });

  test.each(Object.keys(TOKENS) as (keyof typeof TOKENS)[])(
    "the %s token calls its RPCs and is refused the others before Redis",
    async (role) => {
      const sessionId = uniqueId();
      await clientsWith(TOKENS["host-admin"]).local.putSession({
        session: { sessionId, workspaceId: "ws", folder: FolderKind.NORMAL },
      });
      const calls = everyCall(TOKENS[role], sessionId);
      for (const [name, call] of Object.entries(calls)) {
        if (ALLOWED[role].includes(name)) continue;
        const before = await commandsProcessed();
        expect([name, await codeOf(call())]).toEqual([name, "PermissionDenied"]);
        expect(await commandsProcessed()).toBe(before + 1);
      }
      for (const name of ALLOWED[role]) {
        const code = await codeOf(calls[name as keyof typeof calls]());
        expect([name, code]).not.toEqual([name, "Unauthenticated"]);
        expect([name, code]).not.toEqual([name, "PermissionDenied"]);
      }
    },
  );

  test("the refusal names the role and the method", async () => {
    const err = await clientsWith(TOKENS.agent)
      .suggestions.listSuggestions({ sessionId: "s" })
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).rawMessage).toBe(
      "a token of the agent role may not call oda.suggest.v1.SuggestionService/ListSuggestions",
    );
  });

  test("health needs no token", async () => {
    expect(await codeOf(clientsWith(undefined).health.check({}))).toBe("OK");
  });
});
