import { Code, ConnectError } from "@connectrpc/connect";
import { Permission, type Session } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { StartSuggestionResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { SuggestionErrorCode } from "../domain/failures.js";
import { type ChosenOptions, permissionAbove } from "../domain/start-options.js";
import type { HeldStartLock } from "../store/held-start-lock.js";
import { newLockToken, type StartLocks } from "../store/start-locks.js";
import type { StartBegun } from "../store/start-steps.js";
import { foundSuggestion, hostCall, storeCall, suggestionError } from "./errors.js";
import type { StartFlight } from "./start-flights.js";
import { endFailedStart, type HolderDeps, startHeld } from "./start-held.js";
import { postBrief } from "./start-host-calls.js";
import { startResponse } from "./start-response.js";
import { checkedSession, offeringSession, readSuggestion } from "./start-session.js";

/** What one Start needs: the holder's needs and the instance's single-flight locks. */
export interface StartDeps extends HolderDeps {
  /** The instance's single-flight locks (one shared Redis subscriber). */
  readonly startLocks: StartLocks;
}

/**
 * One Start, in the contract's order (start-suggestion.ts `startSuggestion`). The first
 * step is one script (store/start-steps.ts `StartSteps.begin`): the suggestion, its lock when
 * it is open, and the embedded host's session record; a remote host is asked for the
 * session first. Then, until the offer is started or refused: the holder starts it
 * (start-held.ts), a waiter waits for the lock's holder and reads the offer again.
 */
export async function startOnce(
  deps: StartDeps,
  sessionId: string,
  suggestionId: string,
  chosen: ChosenOptions,
): Promise<StartFlight> {
  const locks = deps.startLocks;
  const until = Date.now() + locks.maxWaitMs;
  const remote =
    deps.embeddedHost === undefined
      ? await offeringSession(deps.host, deps.store, sessionId, suggestionId)
      : undefined;
  await checkPermissionFirst(deps, sessionId, chosen, remote);
  const token = newLockToken();
  const begin = (lockToken: string) =>
    storeCall(() =>
      deps.store.start.begin(
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
  const found = await firstFound(deps, sessionId, suggestionId, begun, remote, lock);
  const { session } = found;
  let { suggestion } = found;
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
 * The session and the suggestion the first step found. When either is refused, no chat
 * can exist (the embedded host's session is read in the first step, which fixed this
 * caller's options): the lock it took is ended, and those options bind no later Start.
 */
async function firstFound(
  deps: StartDeps,
  sessionId: string,
  suggestionId: string,
  begun: StartBegun,
  remote: Session | undefined,
  lock: HeldStartLock | undefined,
): Promise<{ session: Session; suggestion: Suggestion }> {
  try {
    const record = begun.sessionRecord;
    const known = remote ?? (record ? deps.embeddedHost?.sessionOf(record) : undefined);
    // An unknown session: not-found first when the offer does not exist either.
    if (known === undefined) foundSuggestion(begun.suggestion, suggestionId);
    const session = checkedSession(sessionId, known);
    return { session, suggestion: foundSuggestion(begun.suggestion, suggestionId) };
  } catch (err) {
    if (lock !== undefined) {
      await endFailedStart(deps.store, sessionId, suggestionId, lock, begun.appended);
    }
    throw err;
  }
}

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
 * The permission is checked before the options can be fixed (`StartSteps.begin`): against the
 * remote host's session, or the embedded host's, read first only when one is chosen.
 */
async function checkPermissionFirst(
  deps: StartDeps,
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
