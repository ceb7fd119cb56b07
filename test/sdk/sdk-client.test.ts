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
  type CallerOptions,
  createChatHostClient,
  createLocalHostClient,
  createSuggestionClient,
  errorCodeOf,
  errorCodeText,
  isSuggestionNotFoundError,
  isSuggestionNotOpenError,
  isSuggestionOpenLimitError,
  isSuggestTaskRefusalError,
  isTaskSuggestionError,
  isWorkspaceMissingError,
  type NodeTransportOptions,
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
} from "../../sdk/src/node.js";
import * as web from "../../sdk/src/web.js";
import { refusalError, suggestionError } from "../../server/rpc/errors.js";
import { createOnePortServer } from "../../server/transport/one-port.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";

/** The SDK's three clients for one server, made by one platform entry's factories. */
type Clients = {
  suggestion: SuggestionClient;
  chatHost: ReturnType<typeof createChatHostClient>;
  localHost: ReturnType<typeof createLocalHostClient>;
};

/** Clients of the Node entry (`@oda/suggest-task/node`): connect-node transports. */
function viaNode(protocol: Omit<NodeTransportOptions, "baseUrl">) {
  return (baseUrl: string, caller: CallerOptions = {}): Clients => {
    const options = { baseUrl, ...protocol, ...caller } as NodeTransportOptions & CallerOptions;
    return {
      suggestion: createSuggestionClient(options),
      chatHost: createChatHostClient(options),
      localHost: createLocalHostClient(options),
    };
  };
}

/** Clients of the web entry (`@oda/suggest-task/web`): connect-web over Node's own fetch. */
function viaFetch(protocol: Omit<web.WebTransportOptions, "baseUrl">) {
  return (baseUrl: string, caller: CallerOptions = {}): Clients => {
    const options = { baseUrl, ...protocol, ...caller };
    return {
      suggestion: web.createSuggestionClient(options),
      chatHost: web.createChatHostClient(options),
      localHost: web.createLocalHostClient(options),
    };
  };
}

/**
 * Every transport the suite runs through: each protocol and HTTP version the service serves
 * on its one port through the Node entry, and Connect and gRPC-Web over `fetch` through the
 * web entry (the transport a browser or an edge runtime uses).
 */
const TRANSPORTS = [
  ["Node: gRPC over h2c", viaNode({ protocol: "grpc" })],
  ["Node: Connect over HTTP/1.1", viaNode({ protocol: "connect", httpVersion: "1.1" })],
  ["Node: Connect over h2c", viaNode({ protocol: "connect", httpVersion: "2" })],
  ["Node: gRPC-Web over HTTP/1.1", viaNode({ protocol: "grpc-web", httpVersion: "1.1" })],
  ["Node: gRPC-Web over h2c", viaNode({ protocol: "grpc-web", httpVersion: "2" })],
  ["fetch: Connect (JSON)", viaFetch({})],
  ["fetch: Connect (binary)", viaFetch({ useBinaryFormat: true })],
  ["fetch: gRPC-Web", viaFetch({ protocol: "grpc-web" })],
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
    suggestionErrorCode: SuggestionErrorCode.NOT_FOUND,
    payload: { suggestionId: "x1" },
    errorInfo: { domain: "task-suggestion", reason: "NOT_FOUND", metadata: { suggestionId: "x1" } },
  });

  const notOpen = await client.draftSuggestion(ids).catch((e: unknown) => e);
  expect(only(notOpen)).toEqual([false, true, false, false, false]);
  expect(notOpen).toMatchObject({
    code: Code.FailedPrecondition,
    rawMessage: 'suggestion "x1" is dismissed',
    errorCode: "task-suggestion/not-open",
    suggestionErrorCode: SuggestionErrorCode.NOT_OPEN,
    payload: { suggestionId: "x1", state: SuggestionState.DISMISSED },
  });

  const openLimit = await client.restoreSuggestion(ids).catch((e: unknown) => e);
  expect(only(openLimit)).toEqual([false, false, true, false, false]);
  expect(openLimit).toMatchObject({
    code: Code.ResourceExhausted,
    rawMessage: "3 suggestions are already open",
    errorCode: "task-suggestion/open-limit",
    suggestionErrorCode: SuggestionErrorCode.OPEN_LIMIT,
    payload: { limit: 3 },
  });

  const missing = await client.startSuggestion(ids).catch((e: unknown) => e);
  expect(only(missing)).toEqual([false, false, false, true, false]);
  expect(missing).toMatchObject({
    code: Code.FailedPrecondition,
    rawMessage: `session "s1" runs in a scheduled task's folder`,
    errorCode: "task-suggestion/workspace-missing",
    suggestionErrorCode: SuggestionErrorCode.WORKSPACE_MISSING,
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

  test("each failure code's text is read from the proto's (error_code) option", () => {
    const texts = [
      [SuggestionErrorCode.NOT_FOUND, "task-suggestion/not-found"],
      [SuggestionErrorCode.NOT_OPEN, "task-suggestion/not-open"],
      [SuggestionErrorCode.OPEN_LIMIT, "task-suggestion/open-limit"],
      [SuggestionErrorCode.WORKSPACE_MISSING, "task-suggestion/workspace-missing"],
    ] as const;
    for (const [code, text] of texts) {
      expect(errorCodeText(code)).toBe(text);
      expect(errorCodeOf(text)).toBe(code);
    }
    expect(errorCodeText(SuggestionErrorCode.UNSPECIFIED)).toBe("");
    expect(errorCodeText(99 as SuggestionErrorCode)).toBe("");
    expect(errorCodeOf("task-suggestion/unheard-of")).toBe(SuggestionErrorCode.UNSPECIFIED);
  });

  test.each(TRANSPORTS)("%s: each failure is its class with its payload", async (_n, clients) => {
    await expectTypedErrors(clients(fake.url).suggestion);
  });

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
