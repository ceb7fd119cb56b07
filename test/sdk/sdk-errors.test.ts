import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, expect, test } from "vitest";
import {
  AgentRole,
  createLocalHostClient,
  createSuggestionClient,
  FolderKind,
  isSuggestionNotFoundError,
  isSuggestionNotOpenError,
  isSuggestionOpenLimitError,
  isSuggestTaskRefusalError,
  isWorkspaceMissingError,
  type LocalHostClient,
  RefusalReason,
  type SuggestionClient,
  SuggestionState,
  SuggestTaskRefusalError,
  WorkspaceMissingReason,
} from "../../sdk/src/node.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";

/** Each typed error class of the SDK, raised by the real service over the SDK's own client. */

const t = useTestServer();
let client: SuggestionClient;
let local: LocalHostClient;
beforeAll(() => {
  client = createSuggestionClient({ baseUrl: t.url });
  local = createLocalHostClient({ baseUrl: t.url });
});

async function sessionWithOffers(count: number, workspaceId = "ws-1") {
  const sessionId = uniqueId("sdk-err");
  await local.putSession({ session: { sessionId, workspaceId, folder: FolderKind.NORMAL } });
  const ids: string[] = [];
  for (let i = 1; i <= count; i++) {
    const { suggestion } = await client.suggestTask({
      context: { sessionId, turnId: `t${i}`, role: AgentRole.TOP_LEVEL },
      args: { title: `Offer ${i}`, tldr: "Worth it", brief: `Brief ${i}` },
    });
    ids.push(suggestion?.id ?? "");
  }
  return { sessionId, ids };
}

function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (err: unknown) => err,
  );
}

test("SuggestionNotFoundError: an id the session never offered", async () => {
  const { sessionId } = await sessionWithOffers(1);
  for (const call of [client.getSuggestion, client.startSuggestion, client.dismissSuggestion]) {
    const err = await failure(call({ sessionId, suggestionId: "never-offered" }));
    expect(isSuggestionNotFoundError(err)).toBe(true);
    expect(err).toMatchObject({
      code: Code.NotFound,
      rawMessage: 'no suggestion "never-offered"',
      errorCode: "task-suggestion/not-found",
      payload: { suggestionId: "never-offered" },
    });
  }
});

test("SuggestionNotOpenError: drafting a dismissed one, starting a drafted one", async () => {
  const { sessionId, ids } = await sessionWithOffers(2);
  const [a = "", b = ""] = ids;
  await client.dismissSuggestion({ sessionId, suggestionId: a });
  const dismissed = await failure(client.draftSuggestion({ sessionId, suggestionId: a }));
  expect(isSuggestionNotOpenError(dismissed)).toBe(true);
  expect(dismissed).toMatchObject({
    code: Code.FailedPrecondition,
    rawMessage: `suggestion "${a}" is dismissed`,
    errorCode: "task-suggestion/not-open",
    payload: { suggestionId: a, state: SuggestionState.DISMISSED },
  });

  await client.draftSuggestion({ sessionId, suggestionId: b });
  const drafted = await failure(client.startSuggestion({ sessionId, suggestionId: b }));
  expect(drafted).toMatchObject({
    rawMessage: `suggestion "${b}" is drafted`,
    payload: { suggestionId: b, state: SuggestionState.DRAFTED },
  });
});

test("SuggestionOpenLimitError: restoring while 3 are open", async () => {
  const { sessionId, ids } = await sessionWithOffers(3);
  const [first = ""] = ids;
  await client.dismissSuggestion({ sessionId, suggestionId: first });
  await client.suggestTask({
    context: { sessionId, turnId: "t4", role: AgentRole.TOP_LEVEL },
    args: { title: "Offer 4", tldr: "Worth it", brief: "Brief 4" },
  });
  const err = await failure(client.restoreSuggestion({ sessionId, suggestionId: first }));
  expect(isSuggestionOpenLimitError(err)).toBe(true);
  expect(err).toMatchObject({
    code: Code.ResourceExhausted,
    rawMessage: "3 suggestions are already open",
    errorCode: "task-suggestion/open-limit",
    payload: { limit: 3 },
  });
  const { open } = await client.listSuggestions({ sessionId });
  expect(open).toHaveLength(3);
});

test("WorkspaceMissingError: no workspace, then a scheduled task's folder", async () => {
  const { sessionId, ids } = await sessionWithOffers(2, "");
  const [a = "", b = ""] = ids;
  const none = await failure(client.startSuggestion({ sessionId, suggestionId: a }));
  expect(isWorkspaceMissingError(none)).toBe(true);
  expect(none).toMatchObject({
    code: Code.FailedPrecondition,
    rawMessage: `session "${sessionId}" belongs to no workspace`,
    errorCode: "task-suggestion/workspace-missing",
    payload: { sessionId, reason: WorkspaceMissingReason.NO_WORKSPACE },
  });

  // The session moves to a scheduled task's folder after it offered.
  await local.putSession({
    session: { sessionId, workspaceId: "ws-1", folder: FolderKind.SCHEDULED_TASK },
  });
  const scheduled = await failure(client.startSuggestion({ sessionId, suggestionId: b }));
  expect(scheduled).toMatchObject({
    rawMessage: `session "${sessionId}" runs in a scheduled task's folder`,
    payload: { sessionId, reason: WorkspaceMissingReason.SCHEDULED_TASK_FOLDER },
  });
});

test("SuggestTaskRefusalError: each quota and precondition, with the contract's text", async () => {
  const { sessionId } = await sessionWithOffers(3);
  const cases = [
    {
      context: { sessionId, turnId: "t9", role: AgentRole.FORKED_HELPER },
      text: "suggest_task is only for the top-level agent; report the follow-up in your result instead.",
      code: Code.PermissionDenied,
      payload: { reason: RefusalReason.NOT_TOP_LEVEL },
    },
    {
      context: { sessionId: "", turnId: "t9", role: AgentRole.TOP_LEVEL },
      text: "suggest_task requires an owning agent session",
      code: Code.FailedPrecondition,
      payload: { reason: RefusalReason.NO_SESSION },
    },
    {
      context: { sessionId, turnId: "t9", role: AgentRole.TOP_LEVEL },
      text: "suggest_task: 3 suggestions already wait for the user; offer no more until one is started or dismissed",
      code: Code.ResourceExhausted,
      payload: { reason: RefusalReason.OPEN_LIMIT, limit: 3 },
    },
  ];
  for (const { context, text, code, payload } of cases) {
    const err = await failure(
      client.suggestTask({ context, args: { title: "T", tldr: "W", brief: "B" } }),
    );
    expect(isSuggestTaskRefusalError(err)).toBe(true);
    expect(err).toBeInstanceOf(SuggestTaskRefusalError);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).toMatchObject({ code, rawMessage: text, payload });
  }
});

test("watchSuggestions streams through the SDK's client; a malformed id stays a plain ConnectError", async () => {
  const { sessionId } = await sessionWithOffers(1);
  const first = await (async () => {
    for await (const lists of client.watchSuggestions({ sessionId })) return lists;
    return undefined;
  })();
  expect(first?.open.map((s) => s.title)).toEqual(["Offer 1"]);

  const err = await failure(
    (async () => {
      for await (const _ of client.watchSuggestions({ sessionId: "bad id" })) {
        // no message is expected
      }
    })(),
  );
  expect(err).toBeInstanceOf(ConnectError);
  expect(isSuggestTaskRefusalError(err) || isSuggestionNotFoundError(err)).toBe(false);
  expect(err).toMatchObject({ code: Code.InvalidArgument });
});
