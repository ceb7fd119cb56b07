import type { Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createRouterTransport,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AgentRole,
  type ClientOptions,
  createChatHostClient,
  createLocalHostClient,
  createSuggestionClient,
  isSuggestionNotFoundError,
  isSuggestionNotOpenError,
  isSuggestionOpenLimitError,
  isSuggestTaskRefusalError,
  isTaskSuggestionError,
  isWorkspaceMissingError,
  RefusalReason,
  type SuggestionClient,
  SuggestionErrorCode,
  SuggestionErrorSchema,
  SuggestionNotFoundError,
  SuggestionNotOpenError,
  SuggestionOpenLimitError,
  SuggestionService,
  SuggestionState,
  SuggestTaskRefusalError,
  SuggestTaskServiceError,
  TaskSuggestionError,
  toSuggestionError,
  WorkspaceMissingError,
  WorkspaceMissingReason,
} from "../../sdk/src/index.js";
import { SuggestionErrorCode as ServerSuggestionErrorCode } from "../../server/domain/failures.js";
import { refusalError, suggestionError } from "../../server/rpc/errors.js";
import { createOnePortServer } from "../../server/transport/one-port.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";

/** The URL options of each protocol and HTTP version the service serves on its one port. */
const PROTOCOLS = [
  ["gRPC over h2c", { protocol: "grpc" }],
  ["Connect over HTTP/1.1", { protocol: "connect", httpVersion: "1.1" }],
  ["Connect over h2c", { protocol: "connect", httpVersion: "2" }],
  ["gRPC-Web over HTTP/1.1", { protocol: "grpc-web", httpVersion: "1.1" }],
  ["gRPC-Web over h2c", { protocol: "grpc-web", httpVersion: "2" }],
] as const;

/** A Connect server on one real port (h2c and HTTP/1.1) serving `routes`; for fakes. */
async function serve(routes: (router: ConnectRouter) => void) {
  const { tcp, h1, h2 } = createOnePortServer(connectNodeAdapter({ routes }));
  const sessions = new Set<Http2Session>();
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
  const { port } = tcp.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      const closed = Promise.all([
        new Promise((resolve) => tcp.close(resolve)),
        new Promise((resolve) => h1.close(resolve)),
        new Promise((resolve) => h2.close(resolve)),
      ]);
      h1.closeAllConnections();
      for (const session of sessions) session.destroy();
      await closed;
    },
  };
}

describe("createSuggestionClient against the real server", () => {
  const t = useTestServer();

  test.each(PROTOCOLS)("%s: offers, and a refusal is a typed error", async (_name, protocol) => {
    const options = { baseUrl: t.server.url, ...protocol } as ClientOptions;
    const client = createSuggestionClient(options);
    const sessionId = uniqueId("sdk-proto");
    await createLocalHostClient(options).putSession({
      session: { sessionId, workspaceId: "ws-1" },
    });
    const { session } = await createChatHostClient(options).getSession({ sessionId });
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

  test("an error without the service's details stays a plain ConnectError", async () => {
    const client = createSuggestionClient({ baseUrl: t.server.url });
    const err = await client
      .listSuggestions({ sessionId: "no spaces allowed" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).not.toBeInstanceOf(SuggestTaskServiceError);
    expect(err).not.toBeInstanceOf(SuggestionNotFoundError);
    expect(err).toMatchObject({ code: Code.InvalidArgument });
  });

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

  test.each(PROTOCOLS)("%s: sent as authorization: Bearer <token>", async (_name, protocol) => {
    seen.length = 0;
    const options = { baseUrl: fake.url, ...protocol, token: "s3cret" } as ClientOptions;
    await createSuggestionClient(options).listSuggestions({ sessionId: "s" });
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

/** A fake SuggestionService whose every RPC fails with the server's own error builders. */
const failing: Partial<ServiceImpl<typeof SuggestionService>> = {
  getSuggestion: (req) => {
    throw suggestionError({ code: "task-suggestion/not-found", suggestionId: req.suggestionId });
  },
  draftSuggestion: (req) => {
    throw suggestionError({
      code: "task-suggestion/not-open",
      suggestionId: req.suggestionId,
      state: SuggestionState.DISMISSED,
    });
  },
  restoreSuggestion: () => {
    throw suggestionError({ code: "task-suggestion/open-limit", limit: 3 });
  },
  startSuggestion: (req) => {
    throw suggestionError({
      code: "task-suggestion/workspace-missing",
      sessionId: req.sessionId,
      reason: WorkspaceMissingReason.SCHEDULED_TASK_FOLDER,
    });
  },
  suggestTask: () => {
    throw refusalError({
      reason: RefusalReason.FIELD_TOO_LONG,
      field: "brief",
      limit: 4000,
      got: 4001,
    });
  },
  listSuggestions: () => {
    throw new ConnectError("boom", Code.Internal);
  },
  async *watchSuggestions(req) {
    yield {};
    throw suggestionError({ code: "task-suggestion/not-found", suggestionId: req.sessionId });
  },
};

/** Runs each failing RPC and checks the typed class, its payload and its guard. */
async function expectTypedErrors(client: SuggestionClient): Promise<void> {
  const ids = { sessionId: "s1", suggestionId: "x1" };
  const guards = [
    isSuggestionNotFoundError,
    isSuggestionNotOpenError,
    isSuggestionOpenLimitError,
    isWorkspaceMissingError,
    isSuggestTaskRefusalError,
  ];
  const only = (err: unknown) => guards.map((guard) => guard(err));

  const notFound = await client.getSuggestion(ids).catch((e: unknown) => e);
  expect(notFound).toBeInstanceOf(SuggestionNotFoundError);
  expect(only(notFound)).toEqual([true, false, false, false, false]);
  expect(notFound).toMatchObject({
    code: Code.NotFound,
    rawMessage: 'no suggestion "x1"',
    errorCode: "task-suggestion/not-found",
    payload: { suggestionId: "x1" },
    errorInfo: { domain: "task-suggestion", reason: "NOT_FOUND", metadata: { suggestionId: "x1" } },
  });

  const notOpen = await client.draftSuggestion(ids).catch((e: unknown) => e);
  expect(only(notOpen)).toEqual([false, true, false, false, false]);
  expect(notOpen).toMatchObject({
    code: Code.FailedPrecondition,
    rawMessage: 'suggestion "x1" is dismissed',
    errorCode: "task-suggestion/not-open",
    payload: { suggestionId: "x1", state: SuggestionState.DISMISSED },
  });

  const openLimit = await client.restoreSuggestion(ids).catch((e: unknown) => e);
  expect(only(openLimit)).toEqual([false, false, true, false, false]);
  expect(openLimit).toMatchObject({
    code: Code.ResourceExhausted,
    rawMessage: "3 suggestions are already open",
    errorCode: "task-suggestion/open-limit",
    payload: { limit: 3 },
  });

  const missing = await client.startSuggestion(ids).catch((e: unknown) => e);
  expect(only(missing)).toEqual([false, false, false, true, false]);
  expect(missing).toMatchObject({
    code: Code.FailedPrecondition,
    rawMessage: `session "s1" runs in a scheduled task's folder`,
    errorCode: "task-suggestion/workspace-missing",
    payload: { sessionId: "s1", reason: WorkspaceMissingReason.SCHEDULED_TASK_FOLDER },
  });

  for (const err of [notFound, notOpen, openLimit, missing]) {
    expect(err).toBeInstanceOf(TaskSuggestionError);
    expect(isTaskSuggestionError(err)).toBe(true);
    expect(err).toBeInstanceOf(ConnectError);
  }

  const refused = await client
    .suggestTask({ context: { role: AgentRole.TOP_LEVEL } })
    .catch((e: unknown) => e);
  expect(only(refused)).toEqual([false, false, false, false, true]);
  expect(isTaskSuggestionError(refused)).toBe(false);
  expect(refused).toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: "suggest_task: brief must be at most 4000 characters (got 4001)",
    payload: { reason: RefusalReason.FIELD_TOO_LONG, field: "brief", limit: 4000, got: 4001 },
  });

  const plain = await client.listSuggestions(ids).catch((e: unknown) => e);
  expect(plain).toBeInstanceOf(ConnectError);
  expect(only(plain)).toEqual([false, false, false, false, false]);
  expect(plain).toMatchObject({ code: Code.Internal, rawMessage: "boom" });

  // An error that ends a server stream is typed too.
  const received: unknown[] = [];
  const streamErr = await (async () => {
    for await (const message of client.watchSuggestions({ sessionId: "w1" })) {
      received.push(message);
    }
  })().catch((e: unknown) => e);
  expect(received).toHaveLength(1);
  expect(streamErr).toBeInstanceOf(SuggestionNotFoundError);
  expect(streamErr).toMatchObject({ payload: { suggestionId: "w1" } });
}

describe("typed errors, one class per failure", () => {
  let fake: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    fake = await serve((router) => router.service(SuggestionService, failing));
  });
  afterAll(() => fake.close());

  test("the SDK's codes are the service's", () => {
    expect(SuggestionErrorCode).toEqual(ServerSuggestionErrorCode);
  });

  test.each(PROTOCOLS)(
    "%s: each failure is its class with its payload",
    async (_name, protocol) => {
      await expectTypedErrors(
        createSuggestionClient({ baseUrl: fake.url, ...protocol } as ClientOptions),
      );
    },
  );

  test("a given transport (in process) throws the same classes", async () => {
    const transport = createRouterTransport((router) => router.service(SuggestionService, failing));
    await expectTypedErrors(createSuggestionClient({ transport }));
  });

  test("toSuggestionError converts errors from clients the SDK did not make", () => {
    const notFound = suggestionError({ code: "task-suggestion/not-found", suggestionId: "a" });
    const typed = toSuggestionError(notFound);
    expect(typed).toBeInstanceOf(SuggestionNotFoundError);
    expect(toSuggestionError(typed)).toBe(typed);
    expect(typed.details).toBe(notFound.details);

    const refusal = toSuggestionError(refusalError({ reason: RefusalReason.NO_SESSION }));
    expect(refusal).toBeInstanceOf(SuggestTaskRefusalError);
    expect(refusal.rawMessage).toBe("suggest_task requires an owning agent session");

    // A plain ConnectError is returned as it is, and is none of the classes.
    const plain = new ConnectError("nope", Code.NotFound);
    expect(toSuggestionError(plain)).toBe(plain);
    for (const cls of [
      SuggestionNotFoundError,
      SuggestionNotOpenError,
      SuggestionOpenLimitError,
      WorkspaceMissingError,
      SuggestTaskRefusalError,
      TaskSuggestionError,
      SuggestTaskServiceError,
    ]) {
      expect(plain instanceof cls).toBe(false);
    }

    // A code that disagrees with the payload is not trusted.
    const mismatched = new ConnectError("odd", Code.NotFound, undefined, [
      {
        desc: SuggestionErrorSchema,
        value: {
          code: "task-suggestion/not-open",
          payload: { case: "notFound", value: { suggestionId: "a" } },
        },
      },
    ]);
    expect(toSuggestionError(mismatched)).not.toBeInstanceOf(SuggestTaskServiceError);

    // Anything else thrown becomes a ConnectError, as connect-es does.
    const converted = toSuggestionError(new TypeError("bad"));
    expect(converted).toBeInstanceOf(ConnectError);
    expect(converted).toMatchObject({ code: Code.Unknown, rawMessage: "bad" });
  });
});
