import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { hostKeys, sessionKeys, startLockKey, startResultChannel } from "./keys.js";
import { type SettleOutcome, settleArgs } from "./script-replies.js";
import type { ScriptReply } from "./scripts.js";
import { startResultMessage } from "./start-lock-protocol.js";
import type { SuggestionStore } from "./suggestion-store.js";
import { callAppend } from "./workspace-inbox.js";

/** What StartSuggestion's first step found (lua/beginStart-4.lua). */
export interface StartBegun {
  /**
   * The embedded host's record of the session (a serialized Session); null when it has
   * none, undefined when it was not asked for (a remote host).
   */
  readonly sessionRecord: Buffer | null | undefined;
  /** The suggestion as the log's fold gives it; undefined when the log has no such offer. */
  readonly suggestion: Suggestion | undefined;
  /** The start lock was taken with the caller's token (the offer was open and the lock free). */
  readonly taken: boolean;
}

/**
 * StartSuggestion's first step as one script (lua/beginStart-4.lua): the suggestion,
 * read as `SuggestionStore.suggestion` reads it, and its start lock taken with `token`
 * when the offer is open; with `hostSession`, the embedded host's record of the session
 * too (it lives in the session's slot).
 */
export async function beginStart(
  store: SuggestionStore,
  sessionId: string,
  suggestionId: string,
  lock: { readonly token: string; readonly ttlMs: number },
  hostSession: boolean,
): Promise<StartBegun> {
  const keys = sessionKeys(sessionId);
  const [record, taken, read] = await store.redis.beginStart(
    keys.log,
    keys.projection,
    startLockKey(sessionId, suggestionId),
    hostKeys(sessionId).session,
    ...[suggestionId, "", lock.token, String(lock.ttlMs), hostSession ? "1" : ""],
  );
  const suggestion = store.cache.one(sessionId, suggestionId, undefined, read) ?? undefined;
  const sessionRecord = !hostSession
    ? undefined
    : record === ""
      ? null
      : Buffer.from(record, "hex");
  return { sessionRecord, suggestion, taken: taken === 1 };
}

/**
 * StartSuggestion's `started` step and the end of the holder's lock as one script
 * (lua/settleStart-5.lua): `settleAndRead` with outcome started, after which the lock is
 * released with `<suggestion_id> released` (announced in the offer's workspace first,
 * as every settlement is; the lock stays held through that).
 */
export function settleStart(
  store: SuggestionStore,
  sessionId: string,
  suggestionId: string,
  chatId: string,
  lockToken: string,
): Promise<{ readonly outcome: SettleOutcome; readonly suggestion: Suggestion | undefined }> {
  const keys = sessionKeys(sessionId);
  return store.announcedSettle(sessionId, suggestionId, async (at) => {
    const [settleReply, readReply] = await callAppend<Promise<[ScriptReply, ScriptReply, number]>>(
      store.redis,
      "settleStart",
      [
        keys.log,
        keys.projection,
        keys.changes,
        startLockKey(sessionId, suggestionId),
        startResultChannel(sessionId),
      ],
      [
        ...settleArgs(suggestionId, "started", chatId, at.token, at.workspace),
        lockToken,
        startResultMessage(suggestionId, "released"),
      ],
      at,
    );
    return store.settledRead(sessionId, suggestionId, settleReply, readReply);
  });
}
