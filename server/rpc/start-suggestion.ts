import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Permission, type Session } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  type Suggestion,
  SuggestionState,
  WorkspaceMissingReason,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type StartSuggestionRequest,
  type StartSuggestionResponse,
  StartSuggestionResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { SuggestionErrorCode } from "../domain/failures.js";
import { requireId } from "../domain/ids.js";
import { type ChosenOptions, checkStartOptions, permissionAbove } from "../domain/start-options.js";
import {
  startedChatSettings,
  startIdempotencyKeys,
  workspaceMissing,
} from "../domain/started-chat.js";
import type { ChatHost } from "../host/chat-host.js";
import type { EmbeddedChatHost } from "../host/embedded-host.js";
import { embeddedChatId } from "../host/embedded-ids.js";
import type { HeldStartLock } from "../store/held-start-lock.js";
import { newLockToken, type StartLocks } from "../store/start-locks.js";
import {
  abandonStart,
  beginStart,
  type StartBegun,
  type StartSettled,
  settleStart,
} from "../store/start-steps.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import type { CallEnd } from "./call-end.js";
import {
  dependencyError,
  foundSuggestion,
  hostCall,
  storeCall,
  suggestionError,
} from "./errors.js";
import { Flights } from "./start-flights.js";
import { createdChat, postBrief, refusedChat } from "./start-host-calls.js";

/** What StartSuggestion needs. */
export interface StartSuggestionDeps {
  readonly store: SuggestionStore;
  readonly host: ChatHost;
  /** The instance's single-flight locks (one shared Redis subscriber). */
  readonly startLocks: StartLocks;
  /**
   * The embedded host, when it is the host: its session record lives in the offering
   * session's slot, so the first step reads it in the same script as the suggestion.
   */
  readonly embeddedHost?: EmbeddedChatHost | undefined;
}

/**
 * StartSuggestion, in the contract's order (docs/contract.md "What Start does"): the host's session (workspace-missing when it
 * belongs to no workspace or runs in a scheduled task's folder); the suggestion's
 * standing (not-found; drafted or dismissed: not-open; started: its chat again, making
 * sure the brief was posted); then, for an open one, the single-flight lock per
 * (session, suggestion), under which the holder creates the chat, records `started`
 * only if the offer is still open, and posts the brief. Callers that find the lock
 * taken wait for the holder's result and answer the same chat; concurrent Starts of one
 * suggestion on one instance share one flight, so the waiters do not repeat the
 * holder's reads (each still stops waiting when its own call ends). Pinned by
 * test/rpc/start.test.ts, test/rpc/start-concurrency.test.ts, test/rpc/start-stall.test.ts and
 * test/e2e/start-crash.test.ts.
 */
export function startSuggestion(
  deps: StartSuggestionDeps,
  request: StartSuggestionRequest,
  end?: () => CallEnd,
): Promise<StartSuggestionResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  const suggestionId = requireId("suggestion_id", request.suggestionId);
  const checked = checkStartOptions(request.options);
  if ("problem" in checked) throw new ConnectError(checked.problem, Code.InvalidArgument);
  const { chosen } = checked;
  // Concurrent Starts of one suggestion on this instance are one flight (start-flights.ts).
  let flights = instanceFlights.get(deps.startLocks);
  if (flights === undefined) {
    flights = new Flights();
    instanceFlights.set(deps.startLocks, flights);
  }
  const key = `${sessionId}\n${suggestionId}`;
  const flight = flights.join(key, () => startOnce(deps, sessionId, suggestionId, chosen), end);
  if (chosen.permission === Permission.UNSPECIFIED) return flight.then(responseOf);
  // A caller that joined another's flight checks its own permission against the one
  // the flight found (the first caller checked it before fixing its options).
  return flight.then((started) => {
    const above = permissionAbove(chosen.permission, started.inherited);
    if (above !== undefined) throw new ConnectError(above, Code.InvalidArgument);
    return started.response;
  });
}

/** What one flight of a Start found: its answer and the permission the chat inherits. */
interface StartFlight {
  readonly response: StartSuggestionResponse;
  readonly inherited: Permission;
}

function responseOf(started: StartFlight): StartSuggestionResponse {
  return started.response;
}

/** The flights of each instance, found by its start locks (one per instance). */
const instanceFlights = new WeakMap<StartLocks, Flights<StartFlight>>();

/** The first step again with a lock taken after waiting; the lock released unless taken. */
async function beginAgain(
  begin: (token: string) => Promise<StartBegun>,
  lock: HeldStartLock,
): Promise<StartBegun> {
  const again = await begin(lock.token).catch(async (err: unknown) => {
    await lock.release("released").catch(() => false);
    throw err;
  });
  if (!again.taken) await lock.release("released").catch(() => false);
  return again;
}

/**
 * The permission is checked before the options can be fixed (beginStart): against the
 * remote host's session, or the embedded host's, read first only when one is chosen.
 */
async function checkPermissionFirst(
  deps: StartSuggestionDeps,
  sessionId: string,
  chosen: ChosenOptions,
  remote: Session | undefined,
): Promise<void> {
  if (chosen.permission === Permission.UNSPECIFIED) return;
  const session = remote ?? (await hostCall(async () => deps.embeddedHost?.findSession(sessionId)));
  checkPermission(chosen, session);
}

/** The chosen permission refused when it is above the session's; nothing when no session. */
function checkPermission(chosen: ChosenOptions, session: Session | undefined): void {
  if (session === undefined) return;
  const above = permissionAbove(chosen.permission, session.settings?.permission ?? 0);
  if (above !== undefined) throw new ConnectError(above, Code.InvalidArgument);
}

/**
 * One Start, in the contract's order (see `startSuggestion`). The first step is one
 * script (store/start-steps.ts `beginStart`): the suggestion, its lock when it is open,
 * and the embedded host's session record; a remote host is asked for the session first.
 */
async function startOnce(
  deps: StartSuggestionDeps,
  sessionId: string,
  suggestionId: string,
  chosen: ChosenOptions,
): Promise<StartFlight> {
  const locks = deps.startLocks;
  const until = Date.now() + locks.maxWaitMs;
  const { embeddedHost } = deps;
  const remote =
    embeddedHost === undefined ? await offeringSession(deps, sessionId, suggestionId) : undefined;
  await checkPermissionFirst(deps, sessionId, chosen, remote);
  const token = newLockToken();
  const begin = (lockToken: string) =>
    storeCall(() =>
      beginStart(
        deps.store,
        sessionId,
        suggestionId,
        { token: lockToken, ttlMs: locks.settings.ttlMs },
        remote === undefined,
        chosen,
      ),
    );
  const begun = await begin(token);
  let lock = begun.taken ? locks.held(sessionId, suggestionId, token) : undefined;
  let fixed = begun.options;
  let appended = begun.appended;
  let session: Session;
  let suggestion: Suggestion;
  try {
    const record = begun.sessionRecord;
    const known = remote ?? (record ? embeddedHost?.sessionOf(record) : undefined);
    // An unknown session: not-found first when the offer does not exist either.
    if (known === undefined) foundSuggestion(begun.suggestion, suggestionId);
    session = checkedSession(sessionId, known);
    suggestion = foundSuggestion(begun.suggestion, suggestionId);
  } catch (err) {
    // No chat can exist (the embedded host's session is read in the first step, which
    // fixed this caller's options): those options bind no later Start.
    if (lock !== undefined) await endFailedStart(deps, sessionId, suggestionId, lock, appended);
    throw err;
  }
  const flight = (response: StartSuggestionResponse): StartFlight => ({
    response,
    inherited: session.settings?.permission ?? Permission.UNSPECIFIED,
  });
  let briefPosted = false;
  for (;;) {
    if (suggestion.state === SuggestionState.STARTED) {
      // A repeated Start, or one that waited: the same chat, and the brief made sure of
      // (an idempotent post), unless the holder just said it posted it.
      if (!briefPosted) await postBrief(deps.host, suggestion, suggestion.chatId);
      return flight(startResponse(suggestion));
    }
    if (suggestion.state !== SuggestionState.OPEN) {
      // The first step takes the lock only for an open offer: none is held here.
      throw suggestionError({
        code: SuggestionErrorCode.NotOpen,
        suggestionId,
        state: suggestion.state,
      });
    }
    if (lock !== undefined && fixed !== undefined) {
      return flight(await startHeld(deps, session, suggestion, lock, fixed, appended));
    }
    const turn = await storeCall(() => locks.take(sessionId, suggestionId, { until }));
    if (turn.kind === "held") {
      // Taken after waiting (the holder went away): begun again with it, which reads the
      // offer as it stands now and fixes the options, or finds an earlier holder's.
      const again = await beginAgain(begin, turn.lock);
      suggestion = foundSuggestion(again.suggestion, suggestionId);
      if (again.taken) [lock, fixed, appended] = [turn.lock, again.options, again.appended];
      continue;
    }
    if (turn.kind === "lapsed" && Date.now() >= until) {
      throw new ConnectError(
        `another Start of suggestion "${suggestionId}" is still running`,
        Code.Unavailable,
      );
    }
    briefPosted = turn.kind === "delivered";
    suggestion = await readSuggestion(deps.store, sessionId, suggestionId);
  }
}

/**
 * The holder's part: create the chat (idempotent by key), record `started` only if the
 * offer is still open, post the brief (idempotent by key), and tell the waiters.
 *
 * The dismissal window (docs/contract.md, "What Start does"): between CreateChat and the
 * atomic `started` step the person may dismiss (or draft) the suggestion. The step then
 * answers not-open, no brief is posted, the suggestion stays dismissed and its chat
 * stays empty; starting it again fails with task-suggestion/not-open
 * (test/rpc/start-stall.test.ts, "dismissed while its chat is being created").
 */
async function startHeld(
  deps: StartSuggestionDeps,
  session: Session,
  suggestion: Suggestion,
  lock: HeldStartLock,
  fixed: ChosenOptions,
  appended: string,
): Promise<StartSuggestionResponse> {
  const { sessionId, id: suggestionId } = suggestion;
  const chatRequest = {
    idempotencyKey: startIdempotencyKeys(sessionId, suggestionId).chat,
    workspaceId: session.workspaceId,
    title: suggestion.title,
    settings: startedChatSettings(session.settings, fixed),
    origin: { sessionId, suggestionId },
  };
  try {
    // CreateChat runs beside the `started` step's inbox announcement (the chat's slot
    // and the workspace's), and the step waits for the chat; it ends the lock in the
    // same script (lua/settleStart-5.lua).
    const chat = createdChat(deps.host, chatRequest);
    let settled: StartSettled;
    try {
      settled = await storeCall(() =>
        settleStart(deps.store, sessionId, suggestionId, chat, lock.token),
      );
    } catch (err) {
      // The host's own failure, when the step failed for want of the chat.
      const hostFailure = await chat.then(
        () => undefined,
        (failure: unknown) => failure,
      );
      if (hostFailure === undefined) throw err;
      // Refused outright, the host made no chat: the options bind no later Start.
      if (refusedChat(hostFailure)) {
        await endFailedStart(deps, sessionId, suggestionId, lock, appended);
      }
      throw hostFailure;
    }
    lock.ended();
    const { kind, state } = settled.outcome;
    switch (kind) {
      case "recorded":
      case "already": {
        // `already`: an earlier holder (stalled past its lock, or crashed after this
        // step) recorded it; the recorded chat is the one, and its brief is made sure of.
        const started = foundSuggestion(settled.suggestion, suggestionId);
        await postBrief(deps.host, started, started.chatId);
        return startResponse(started);
      }
      case "not-open":
        throw suggestionError({ code: SuggestionErrorCode.NotOpen, suggestionId, state });
      case "not-found":
        // The chat's suggestions were erased since the lock was taken (DeleteSuggestions):
        // the chat made for this one would keep its title and origin, on no one's list.
        if (deps.embeddedHost !== undefined) await forgetMadeChat(deps, chatRequest.idempotencyKey);
        throw suggestionError({ code: SuggestionErrorCode.NotFound, suggestionId });
      default:
        // open-limit: a start never asks the open limit.
        throw new Error(`settle answered ${kind} for a start`);
    }
  } finally {
    // A call failed before the `started` step: released here. A lock that cannot be
    // released (Redis gone) lapses after its lifetime.
    if (!lock.done) await lock.release("released").catch(() => false);
  }
}

/**
 * Ends a Start that failed before any chat could exist: the `starting` record it
 * appended, if it did (`appended`), is abandoned while it still holds the lock, and the
 * lock is released (store/start-steps.ts `abandonStart`), so that the next Start is
 * fixed with its own options rather than those of one that created nothing. Options an
 * earlier holder fixed stay (it may have created the chat with them). A failure here
 * leaves the lock to lapse (test/rpc/start-abandoned.test.ts).
 */
async function endFailedStart(
  deps: StartSuggestionDeps,
  sessionId: string,
  suggestionId: string,
  lock: HeldStartLock,
  appended: string,
): Promise<void> {
  if (appended === "") {
    await lock.release("released").catch(() => false);
    return;
  }
  await abandonStart(deps.store, sessionId, suggestionId, lock, appended).catch(() =>
    lock.release("released").catch(() => false),
  );
}

/**
 * Erases the chat a Start made on the embedded host for a suggestion that was erased
 * before `started` was recorded: nobody was answered that chat, and no record points at
 * it. A remote host's chat is the host's to keep.
 */
async function forgetMadeChat(deps: StartSuggestionDeps, idempotencyKey: string): Promise<void> {
  const chatId = embeddedChatId(idempotencyKey);
  await storeCall(() => deps.store.erase(chatId));
}

/**
 * A Start's answer, the one object every caller of its flight gets: frozen in depth when
 * its suggestion is (the store's are), so that the gRPC fast path encodes it once for
 * all of them (transport/encoded-once.ts), as it does a read's.
 */
function startResponse(started: Suggestion): StartSuggestionResponse {
  const response = create(StartSuggestionResponseSchema, {
    chatId: started.chatId,
    suggestion: started,
  });
  return Object.isFrozen(started) ? Object.freeze(response) : response;
}

/**
 * The offering chat as a remote host knows it (`checkedSession`). A session the host
 * does not know cannot start anything: an offer it never made is not-found, and one it
 * made (the host has since forgotten the chat) belongs to no workspace now.
 */
async function offeringSession(
  deps: StartSuggestionDeps,
  sessionId: string,
  suggestionId: string,
): Promise<Session> {
  let session: Session | undefined;
  try {
    ({ session } = await deps.host.getSession({ sessionId }));
  } catch (err) {
    if (!(err instanceof ConnectError && err.code === Code.NotFound)) {
      throw dependencyError(err, "the chat host");
    }
  }
  if (session === undefined) await readSuggestion(deps.store, sessionId, suggestionId);
  return checkedSession(sessionId, session);
}

/**
 * The offering chat, with a workspace and not in a scheduled task's folder; a session
 * the host does not know (once its offer is known to exist) belongs to no workspace.
 */
function checkedSession(sessionId: string, session: Session | undefined): Session {
  const reason =
    session === undefined ? WorkspaceMissingReason.NO_WORKSPACE : workspaceMissing(session);
  if (session === undefined || reason !== undefined) {
    throw suggestionError({
      code: SuggestionErrorCode.WorkspaceMissing,
      sessionId,
      reason: reason ?? WorkspaceMissingReason.NO_WORKSPACE,
    });
  }
  return session;
}

/** One suggestion as the log's fold gives it; not-found when the log has no such offer. */
async function readSuggestion(
  store: SuggestionStore,
  sessionId: string,
  suggestionId: string,
): Promise<Suggestion> {
  const suggestion = await storeCall(() => store.suggestion(sessionId, suggestionId));
  return foundSuggestion(suggestion, suggestionId);
}
