import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { parseEntries } from "../domain/fold.js";
import { type ChosenOptions, chosenOf, NO_OPTIONS, optionFields } from "../domain/start-options.js";
import type { RedisClient } from "../redis/redis-client.js";
import type { HeldStartLock } from "./held-start-lock.js";
import { settlementAnnounced } from "./inbox-token.js";
import { hostKeys, sessionKeys, startLockKey, startResultChannel } from "./keys.js";
import { runScript } from "./run-script.js";
import { type SettleOutcome, settleArgs } from "./script-replies.js";
import { startResultMessage } from "./start-lock-protocol.js";
import type { SuggestionReads } from "./suggestion-reads.js";
import type { WorkspaceInbox } from "./workspace-inbox.js";

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
  /**
   * With the lock taken: the options the Start is fixed with, those of the offer's
   * first `starting` record (the caller's, appended now, or an earlier holder's).
   */
  readonly options: ChosenOptions | undefined;
  /**
   * The stream id of the `starting` record this step appended ('' when it appended
   * none: the lock was not taken, or an earlier holder had fixed the options).
   */
  readonly appended: string;
}

/** What StartSuggestion's steps need of the store: its client, inbox, reads, retention. */
export interface StartStepParts {
  readonly redis: RedisClient;
  /** The inbox a settlement is announced in first (store/workspace-inbox.ts). */
  readonly inbox: WorkspaceInbox;
  /** How the store reads suggestions, through its lists cache (store/suggestion-reads.ts). */
  readonly reads: SuggestionReads;
  /** How long a chat's keys live after its last write (RETENTION_DAYS); 0: for ever. */
  readonly retentionMs: number;
}

/** What the `started` step left: the outcome and the suggestion. */
export interface StartSettled {
  readonly outcome: SettleOutcome;
  readonly suggestion: Suggestion | undefined;
}

/** StartSuggestion's steps, each one script, on the sessions of one store. */
export class StartSteps {
  readonly #parts: StartStepParts;

  constructor(parts: StartStepParts) {
    this.#parts = parts;
  }

  /**
   * StartSuggestion's first step as one script (lua/beginStart-4.lua): the suggestion,
   * read as `SuggestionStore.suggestion` reads it, and its start lock taken with `token`
   * when the offer is open (or found already held with it: a caller that took the lock
   * after waiting begins again); with `hostSession`, the embedded host's record of the
   * session too (it lives in the session's slot). With the lock, the Start's options are
   * fixed: the caller's `options`, unless an earlier holder fixed its own.
   */
  async begin(
    sessionId: string,
    suggestionId: string,
    lock: { readonly token: string; readonly ttlMs: number },
    hostSession: boolean,
    options: ChosenOptions = NO_OPTIONS,
  ): Promise<StartBegun> {
    const keys = sessionKeys(sessionId);
    const [record, taken, read, fixed, appended] = await runScript(
      this.#parts.redis,
      "beginStart",
      keys.log,
      keys.projection,
      startLockKey(sessionId, suggestionId),
      hostKeys(sessionId).session,
      ...[suggestionId, "", lock.token, String(lock.ttlMs), hostSession ? "1" : ""],
      ...optionFields(options),
    );
    const suggestion =
      this.#parts.reads.cache.one(sessionId, suggestionId, undefined, read) ?? undefined;
    const sessionRecord = !hostSession
      ? undefined
      : record === ""
        ? null
        : Buffer.from(record, "hex");
    const fields = parseEntries([["0-0", (fixed ?? []) as string[]]])[0]?.fields ?? {};
    return {
      sessionRecord,
      suggestion,
      taken: taken === 1,
      options: taken === 1 ? chosenOf(fields) : undefined,
      appended: taken === 1 ? (appended ?? "") : "",
    };
  }

  /**
   * Ends a Start that failed before any chat could exist (the session has no workspace,
   * the host refused CreateChat) as one script (lua/abandonStart-4.lua): while `lock` is
   * still held, the `starting` record the Start appended (`StartBegun.appended`) is
   * abandoned, so a later Start fixes its own options; then the lock is released for the
   * waiters (`released`). Answers whether the record was abandoned.
   */
  async abandon(
    sessionId: string,
    suggestionId: string,
    lock: HeldStartLock,
    starting: string,
  ): Promise<boolean> {
    lock.ended();
    const keys = sessionKeys(sessionId);
    const [abandoned] = await runScript(
      this.#parts.redis,
      "abandonStart",
      keys.log,
      keys.projection,
      startLockKey(sessionId, suggestionId),
      startResultChannel(sessionId),
      suggestionId,
      lock.token,
      starting,
      startResultMessage(suggestionId, "released"),
    );
    return abandoned === 1;
  }

  /**
   * StartSuggestion's `started` step and the end of the holder's lock as one script
   * (lua/settleStart-5.lua): `settleAndRead` with outcome started, after which the lock is
   * released with `<suggestion_id> released` (announced in the offer's workspace first,
   * as every settlement is; the lock stays held through that), with `started`'s chat id.
   * The chat's id may still be on its way (a `Promise`, the host's CreateChat): the
   * announcement is independent of the chat (another slot), so both leave in one turn and
   * the step waits for the chat only after it.
   */
  settle(
    sessionId: string,
    suggestionId: string,
    started: string | Promise<string>,
    lockToken: string,
  ): Promise<StartSettled> {
    const keys = sessionKeys(sessionId);
    const { inbox, reads } = this.#parts;
    return settlementAnnounced(inbox, reads.cache, sessionId, suggestionId, async (at) => {
      const chatId = await started;
      const [settleReply, readReply] = await runScript(
        this.#parts.redis,
        "settleStart",
        keys.log,
        keys.projection,
        keys.changes,
        startLockKey(sessionId, suggestionId),
        startResultChannel(sessionId),
        ...settleArgs(suggestionId, "started", chatId, at.token, at.workspace, inbox.channelParts),
        lockToken,
        startResultMessage(suggestionId, "released"),
        // ARGV[11] of settleStart-5.lua.
        ...(this.#parts.retentionMs > 0 ? [String(this.#parts.retentionMs)] : []),
      );
      return reads.settledRead(sessionId, suggestionId, settleReply, readReply);
    });
  }
}
