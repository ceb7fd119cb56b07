import { Code, ConnectError, createRouterTransport, type ServiceImpl } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AgentRole,
  createSuggestionClient,
  errorCodeOf,
  errorCodeText,
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
} from "../../sdk/src/node.js";
import { refusalError, suggestionError } from "../../server/rpc/errors.js";
import { serve, TRANSPORTS } from "../support/sdk-clients.js";

/*
 * The SDK's typed errors, one class per failure, on every transport, thrown by a fake
 * service that fails with the server's own error builders. Calls: sdk-client-rpcs.test.ts.
 */

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
