import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  SuggestionErrorSchema,
  SuggestionState,
  WorkspaceMissingReason,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { startIdempotencyKeys } from "../../server/domain/started-chat.js";
import { embeddedChatId } from "../../server/host/embedded-ids.js";
import { hostKeys, startLockKey } from "../../server/store/keys.js";
import { putSession, uniqueId } from "../support/harness.js";
import {
  expectNotFound,
  expectNotOpen,
  expectOpenLimit,
  failureOf,
  logRecords,
} from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne, sessionWithOffer } from "../support/suggest.js";

/*
 * StartSuggestion's failure codes (not-found, not-open, workspace-missing, open-limit,
 * INVALID_ARGUMENT), each leaving nothing created, recorded or locked.
 * A Start that goes through: test/rpc/start.test.ts.
 */

const t = useTestServer();
const offered = () => sessionWithOffer(t.clients);

describe("the failure codes", () => {
  /** Asserts workspace-missing for `sessionId` with `reason`. */
  async function expectWorkspaceMissing(
    call: Promise<unknown>,
    sessionId: string,
    reason: WorkspaceMissingReason,
    message: string,
  ) {
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError: ${String(err)}`);
    expect(err.rawMessage).toBe(message);
    expect(Code[err.code]).toBe("FailedPrecondition");
    const detail = err.findDetails(SuggestionErrorSchema)[0];
    expect(detail?.code).toBe("task-suggestion/workspace-missing");
    expect(detail?.payload).toEqual({
      case: "workspaceMissing",
      value: expect.objectContaining({ sessionId, reason }),
    });
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({
      domain: "task-suggestion",
      reason: "WORKSPACE_MISSING",
      metadata: { sessionId, reason: WorkspaceMissingReason[reason] },
    });
  }

  test("not-found: no suggestion with that id, for a known session and an unknown one", async () => {
    const { sessionId } = await offered();
    expectNotFound(
      await failureOf(t.clients.suggestions.startSuggestion({ sessionId, suggestionId: "nope" })),
      "nope",
    );
    expectNotFound(
      await failureOf(
        t.clients.suggestions.startSuggestion({ sessionId: uniqueId(), suggestionId: "nope" }),
      ),
      "nope",
    );
  });

  test.each([
    ["drafted", SuggestionState.DRAFTED],
    ["dismissed", SuggestionState.DISMISSED],
  ] as const)("not-open: a %s suggestion, nothing created or recorded", async (word, state) => {
    const { sessionId, suggestionId } = await offered();
    if (word === "drafted")
      await t.clients.suggestions.draftSuggestion({ sessionId, suggestionId });
    else await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId });
    const before = await logRecords(t.redis, sessionId);
    const f = await failureOf(t.clients.suggestions.startSuggestion({ sessionId, suggestionId }));
    expectNotOpen(f, suggestionId, state);
    expect(f.message).toBe(`suggestion "${suggestionId}" is ${word}`);
    expect(await logRecords(t.redis, sessionId)).toEqual(before);
    // Nothing was asked of the host: the chat this Start would have made does not exist.
    const chatId = embeddedChatId(startIdempotencyKeys(sessionId, suggestionId).chat);
    expect(await t.redis.exists(hostKeys(chatId).chat)).toBe(0);
  });

  test("workspace-missing: a session in no workspace", async () => {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId, workspaceId: "" });
    const { id } = await offerOne(t.clients, sessionId);
    await expectWorkspaceMissing(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId: id }),
      sessionId,
      WorkspaceMissingReason.NO_WORKSPACE,
      `session "${sessionId}" belongs to no workspace`,
    );
    // The options this Start fixed bind no later one (test/rpc/start-abandoned.test.ts).
    expect((await logRecords(t.redis, sessionId)).map((r) => r.type)).toEqual([
      "offered",
      "starting",
      "abandoned",
    ]);
  });

  test("workspace-missing: a session in a scheduled task's folder", async () => {
    const { sessionId, suggestionId } = await offered();
    await putSession(t.clients, { sessionId, folder: FolderKind.SCHEDULED_TASK });
    await expectWorkspaceMissing(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
      sessionId,
      WorkspaceMissingReason.SCHEDULED_TASK_FOLDER,
      `session "${sessionId}" runs in a scheduled task's folder`,
    );
    // The options this Start fixed bind no later one (test/rpc/start-abandoned.test.ts).
    expect((await logRecords(t.redis, sessionId)).map((r) => r.type)).toEqual([
      "offered",
      "starting",
      "abandoned",
    ]);
  });

  test("workspace-missing: an offer whose session the host no longer knows", async () => {
    const { sessionId, suggestionId } = await offered();
    await t.redis.del(`host:{${sessionId}}:session`);
    await expectWorkspaceMissing(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
      sessionId,
      WorkspaceMissingReason.NO_WORKSPACE,
      `session "${sessionId}" belongs to no workspace`,
    );
  });

  test("open-limit: restoring a dismissed suggestion with three open", async () => {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    const first = await offerOne(t.clients, sessionId, "First");
    await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: first.id });
    for (const title of ["Second", "Third", "Fourth"]) await offerOne(t.clients, sessionId, title);
    expectOpenLimit(
      await failureOf(
        t.clients.suggestions.restoreSuggestion({ sessionId, suggestionId: first.id }),
      ),
    );
    // Starting one of the three frees a place: the restore goes through, and the restored
    // suggestion starts like any open one.
    const { open } = await t.clients.suggestions.listSuggestions({ sessionId });
    await t.clients.suggestions.startSuggestion({ sessionId, suggestionId: open[0]?.id ?? "" });
    await t.clients.suggestions.restoreSuggestion({ sessionId, suggestionId: first.id });
    const res = await t.clients.suggestions.startSuggestion({ sessionId, suggestionId: first.id });
    expect(res.suggestion?.state).toBe(SuggestionState.STARTED);
  });

  test.each([
    ["an empty session id", { sessionId: "", suggestionId: "g" }, "session_id is required"],
    [
      "a malformed session id",
      { sessionId: "a b", suggestionId: "g" },
      "session_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
    ["an empty suggestion id", { sessionId: "s", suggestionId: "" }, "suggestion_id is required"],
    [
      "a malformed suggestion id",
      { sessionId: "s", suggestionId: "{x}" },
      "suggestion_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
  ])("%s is INVALID_ARGUMENT", async (_, request, message) => {
    const f = await failureOf(t.clients.suggestions.startSuggestion(request));
    expect(Code[f.code]).toBe("InvalidArgument");
    expect(f.message).toBe(message);
  });

  test("a refused Start leaves no lock behind", async () => {
    const { sessionId, suggestionId } = await offered();
    await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId });
    await failureOf(t.clients.suggestions.startSuggestion({ sessionId, suggestionId }));
    expect(await t.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
  });
});
