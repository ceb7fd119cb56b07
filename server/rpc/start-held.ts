import type { Session } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { StartSuggestionResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { SuggestionErrorCode } from "../domain/failures.js";
import type { ChosenOptions } from "../domain/start-options.js";
import { startedChatSettings, startIdempotencyKeys } from "../domain/started-chat.js";
import type { ChatHost } from "../host/chat-host.js";
import type { EmbeddedChatHost } from "../host/embedded-host.js";
import { embeddedChatId } from "../host/embedded-ids.js";
import type { HeldStartLock } from "../store/held-start-lock.js";
import type { StartSettled } from "../store/start-steps.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { foundSuggestion, storeCall, suggestionError } from "./errors.js";
import { createdChat, postBrief, refusedChat } from "./start-host-calls.js";
import { startResponse } from "./start-response.js";

/**
 * What the holder of a Start's lock needs: the store, the chat host, and the embedded
 * host when it is the host (a chat it made for an erased suggestion is erased again).
 */
export interface HolderDeps {
  readonly store: SuggestionStore;
  readonly host: ChatHost;
  /** The embedded host, when it is the host (no `CHAT_HOST_URL`). */
  readonly embeddedHost?: EmbeddedChatHost | undefined;
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
export async function startHeld(
  deps: HolderDeps,
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
        deps.store.start.settle(sessionId, suggestionId, chat, lock.token),
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
        await endFailedStart(deps.store, sessionId, suggestionId, lock, appended);
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
        if (deps.embeddedHost !== undefined) {
          await forgetMadeChat(deps.store, chatRequest.idempotencyKey);
        }
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
 * lock is released (store/start-steps.ts `StartSteps.abandon`), so that the next Start is
 * fixed with its own options rather than those of one that created nothing. Options an
 * earlier holder fixed stay (it may have created the chat with them). A failure here
 * leaves the lock to lapse (test/rpc/start-abandoned.test.ts).
 */
export async function endFailedStart(
  store: SuggestionStore,
  sessionId: string,
  suggestionId: string,
  lock: HeldStartLock,
  appended: string,
): Promise<void> {
  if (appended === "") {
    await lock.release("released").catch(() => false);
    return;
  }
  await store.start
    .abandon(sessionId, suggestionId, lock, appended)
    .catch(() => lock.release("released").catch(() => false));
}

/**
 * Erases the chat a Start made on the embedded host for a suggestion that was erased
 * before `started` was recorded: nobody was answered that chat, and no record points at
 * it. A remote host's chat is the host's to keep.
 */
async function forgetMadeChat(store: SuggestionStore, idempotencyKey: string): Promise<void> {
  const chatId = embeddedChatId(idempotencyKey);
  await storeCall(() => store.erase(chatId));
}
