import http from "node:http";
import http2 from "node:http2";
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
import { presentedToken } from "../../server/pipeline/auth.js";
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
  const info = await t.redis.info("stats");
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1]);
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

describe("the authorization header is read alike over HTTP/1.1 and HTTP/2", () => {
  const LIST = "/oda.suggest.v1.SuggestionService/ListSuggestions";
  const body = JSON.stringify({ sessionId: "s-ws" });
  type Outcome = readonly [status: number, message: string];
  const connectMessage = (text: string) => (text === "" ? "" : (JSON.parse(text).message ?? ""));

  /** Connect JSON over HTTP/1.1: the HTTP status and the error's message. */
  function overH1(authorization: string): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        `${t.server.url}${LIST}`,
        { method: "POST", headers: { "content-type": "application/json", authorization } },
        (res) => {
          let text = "";
          res.on("data", (chunk: Buffer) => {
            text += chunk.toString();
          });
          res.on("end", () =>
            resolve([res.statusCode ?? 0, res.statusCode === 200 ? "" : connectMessage(text)]),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  /**
   * Over HTTP/2: binary gRPC (the fast path; grpc-status and grpc-message) or Connect JSON
   * (connect-node; the HTTP status and the error's message).
   */
  async function overH2(authorization: string, kind: "grpc" | "connect"): Promise<Outcome> {
    const session = http2.connect(t.server.url);
    try {
      return await new Promise((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": LIST,
          "content-type": kind === "grpc" ? "application/grpc" : "application/json",
          te: "trailers",
          authorization,
        });
        let meta: http2.IncomingHttpHeaders = {};
        let text = "";
        stream.on("response", (h) => {
          meta = { ...meta, ...h };
        });
        stream.on("trailers", (h) => {
          meta = { ...meta, ...h };
        });
        stream.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        stream.on("end", () => {
          if (kind === "grpc") {
            resolve([Number(meta["grpc-status"] ?? -1), String(meta["grpc-message"] ?? "")]);
          } else {
            const status = Number(meta[":status"]);
            resolve([status, status === 200 ? "" : connectMessage(text)]);
          }
        });
        stream.on("error", reject);
        stream.end(
          kind === "grpc" ? Buffer.from([0, 0, 0, 0, 6, 0x0a, 4, 0x73, 0x2d, 0x77, 0x73]) : body,
        );
      });
    } finally {
      session.close();
    }
  }

  const REFUSED = "a valid bearer token is required";
  // [HTTP/1.1 Connect, HTTP/2 Connect, HTTP/2 gRPC (the fast path)]
  const CASES: [string, string, Outcome, Outcome, Outcome][] = [
    ["the exact token", `Bearer ${TOKENS.app}`, [200, ""], [200, ""], [0, ""]],
    // HTTP/1.1's parser takes the trailing space off (RFC 9110 OWS); over HTTP/2 the value
    // makes the request malformed (RFC 9113 section 8.2.1) and Node drops the field.
    [
      "a token with a trailing space",
      `Bearer ${TOKENS.app} `,
      [200, ""],
      [401, REFUSED],
      [Code.Unauthenticated, REFUSED],
    ],
    [
      "a token with a space inside",
      `Bearer ${TOKENS.app.slice(0, 5)} ${TOKENS.app.slice(5)}`,
      [401, REFUSED],
      [401, REFUSED],
      [Code.Unauthenticated, REFUSED],
    ],
  ];

  test.each(CASES)("%s", async (_name, value, h1, h2Connect, h2Grpc) => {
    expect(await overH1(value)).toEqual(h1);
    expect(await overH2(value, "connect")).toEqual(h2Connect);
    expect(await overH2(value, "grpc")).toEqual(h2Grpc);
  });

  test("what each protocol hands over for a trailing space: HTTP/1.1 trims it, HTTP/2 drops the field", async () => {
    const seen = async (server: http.Server | http2.Http2Server, url: (port: number) => string) => {
      const got = new Promise<string | undefined>((resolve) =>
        server.on("request", (req: http.IncomingMessage | http2.Http2ServerRequest, res) => {
          resolve(req.headers.authorization);
          res.end();
        }),
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as { port: number }).port;
      if (server instanceof http.Server) {
        http
          .get(url(port), { headers: { authorization: "Bearer tok " } })
          .on("response", (r) => r.resume());
      } else {
        const session = http2.connect(url(port));
        session.request({ ":path": "/", authorization: "Bearer tok " }).resume();
        void got.then(() => session.close());
      }
      const value = await got;
      server.close();
      return value;
    };
    expect(await seen(http.createServer(), (p) => `http://127.0.0.1:${p}/`)).toBe("Bearer tok");
    expect(await seen(http2.createServer(), (p) => `http://127.0.0.1:${p}`)).toBe(undefined);
  });

  test("our comparison is one: the same token of the value either protocol hands over", () => {
    expect(presentedToken(`Bearer ${TOKENS.app}`)).toBe(TOKENS.app);
    expect(presentedToken(`Bearer ${TOKENS.app} `)).toBe(TOKENS.app);
    expect(presentedToken(`\tbearer ${TOKENS.app}\t`)).toBe(TOKENS.app);
    expect(presentedToken("Bearer ab cd")).toBe(undefined);
    expect(presentedToken("Bearer  abcd")).toBe(undefined);
    expect(presentedToken(null)).toBe(undefined);
  });
});
