import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AgentRole,
  createChatHostClient,
  createSuggestionClient,
  isSuggestTaskRefusalError,
  RefusalReason,
  SuggestionNotFoundError,
  SuggestionService,
  SuggestTaskRefusalError,
  SuggestTaskServiceError,
} from "../../sdk/src/node.js";
import { uniqueId } from "../support/harness.js";
import { serve, TRANSPORTS } from "../support/sdk-clients.js";
import { useTestServer } from "../support/server-fixture.js";

/*
 * The SDK's clients on every transport: calls to the real server, and the bearer token
 * they send. Typed errors: test/sdk/sdk-client-errors.test.ts.
 */

describe("createSuggestionClient against the real server", () => {
  const t = useTestServer();

  test.each(TRANSPORTS)("%s: offers, and a refusal is a typed error", async (_name, clients) => {
    const { suggestion: client, localHost, chatHost } = clients(t.server.url);
    const sessionId = uniqueId("sdk-proto");
    await localHost.putSession({ session: { sessionId, workspaceId: "ws-1" } });
    const { session } = await chatHost.getSession({ sessionId });
    expect(session?.workspaceId).toBe("ws-1");

    const res = await client.suggestTask({
      context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL, toolCallId: "c1" },
      args: { title: "Fix it", tldr: "Because", brief: "Do the thing" },
    });
    expect(res.result).toBe(
      'Suggested "Fix it". The user decides whether to start it; do not start it yourself.',
    );

    const err = await client
      .suggestTask({
        context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL, toolCallId: "c2" },
        args: { title: "Again", tldr: "Because", brief: "Do the thing" },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SuggestTaskRefusalError);
    expect(err).toBeInstanceOf(ConnectError);
    if (!isSuggestTaskRefusalError(err)) return;
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toBe(
      "suggest_task: one suggestion per turn; this turn already offered one",
    );
    expect(err.payload).toMatchObject({ reason: RefusalReason.TURN_LIMIT, limit: 1 });
    expect(err.errorInfo).toMatchObject({ domain: "suggest_task", reason: "TURN_LIMIT" });
  });

  test.each(TRANSPORTS)(
    "%s: an error without details stays a plain ConnectError",
    async (_n, clients) => {
      const err = await clients(t.server.url)
        .suggestion.listSuggestions({ sessionId: "no spaces allowed" })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect(err).not.toBeInstanceOf(SuggestTaskServiceError);
      expect(err).not.toBeInstanceOf(SuggestionNotFoundError);
      expect(err).toMatchObject({ code: Code.InvalidArgument });
    },
  );

  test("the chat host client answers NOT_FOUND as a plain ConnectError", async () => {
    const err = await createChatHostClient({ baseUrl: t.server.url })
      .getSession({ sessionId: uniqueId("nobody") })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).not.toBeInstanceOf(SuggestTaskServiceError);
    expect(err).toMatchObject({ code: Code.NotFound });
  });
});

describe("the bearer token", () => {
  const seen: (string | null)[] = [];
  let fake: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    fake = await serve((router) =>
      router.service(SuggestionService, {
        listSuggestions(_req, context) {
          seen.push(context.requestHeader.get("authorization"));
          return {};
        },
      }),
    );
  });
  afterAll(() => fake.close());

  test.each(TRANSPORTS)("%s: sent as authorization: Bearer <token>", async (_name, clients) => {
    seen.length = 0;
    await clients(fake.url, { token: "s3cret" }).suggestion.listSuggestions({ sessionId: "s" });
    expect(seen).toEqual(["Bearer s3cret"]);
  });

  test("a function token is asked before every call; no token sends none", async () => {
    seen.length = 0;
    let n = 0;
    const client = createSuggestionClient({
      baseUrl: fake.url,
      token: async () => `t${++n}`,
    });
    await client.listSuggestions({ sessionId: "s" });
    await client.listSuggestions({ sessionId: "s" });
    await createSuggestionClient({ baseUrl: fake.url }).listSuggestions({ sessionId: "s" });
    expect(seen).toEqual(["Bearer t1", "Bearer t2", null]);
  });

  test("a given transport gets the token too, and the caller's interceptors run after it", async () => {
    seen.length = 0;
    const order: string[] = [];
    const spy: Interceptor = (next) => (req) => {
      order.push(`caller saw ${req.header.get("authorization")}`);
      return next(req);
    };
    const transport = createGrpcTransport({ baseUrl: fake.url });
    await createSuggestionClient({
      transport,
      token: "given",
      interceptors: [spy],
    }).listSuggestions({ sessionId: "s" }, { headers: { "x-call": "1" } });
    expect(seen).toEqual(["Bearer given"]);
    expect(order).toEqual(["caller saw Bearer given"]);
  });
});
