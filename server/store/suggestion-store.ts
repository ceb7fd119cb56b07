import type { Cluster, Redis } from "ioredis";
import type { Settlement, Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { DismissalChoice } from "../domain/dismissal.js";
import type { LogRecord, SuggestionLists } from "../domain/fold.js";
import type { Outcome } from "../domain/settlement.js";
import { confirmAfter, notedLast } from "../redis/write-confirm.js";
import {
  settlementsAfter,
  type Withdrawal,
  type WithdrawOutcome,
  withdrawOffer,
} from "./agent-settlements.js";
import { type ErasureReport, eraseChat } from "./chat-erasure.js";
import {
  announced,
  type Fenced,
  type InboxToken,
  NO_TOKEN,
  settlementAnnounced,
} from "./inbox-token.js";
import { sessionKeys } from "./keys.js";
import { ListsCache, type ListsSnapshot } from "./lists-cache.js";
import { runScript } from "./run-script.js";
import {
  type NewOffer,
  type OfferOutcome,
  offerArgs,
  offerOutcome,
  type SettleOutcome,
  settleArgs,
  settleOutcome,
} from "./script-replies.js";
import type { ScriptReply } from "./scripts.js";
import { StartSteps } from "./start-steps.js";
import { SuggestionReads } from "./suggestion-reads.js";
import { WorkspaceInbox } from "./workspace-inbox.js";

export type { ListsSnapshot } from "./lists-cache.js";
export type { NewOffer, OfferOutcome, SettleOutcome } from "./script-replies.js";

/**
 * One session's suggestions on Redis: the stream is the truth, the projection hash a
 * cache the scripts keep and rebuild (see lua/includes/projection.lua).
 */
export class SuggestionStore {
  /** The workspace inbox the offers and restores announce themselves in. */
  readonly inbox: WorkspaceInbox;
  /** What this instance last read of each session, by version (lists-cache.ts). */
  readonly cache: ListsCache;
  /** StartSuggestion's steps on this store's sessions (start-steps.ts). */
  readonly start: StartSteps;
  /** How this store reads its sessions, through `cache` (suggestion-reads.ts). */
  readonly #reads: SuggestionReads;

  /**
   * @param inbox the inbox to announce in; tests pass one that fails between steps.
   * @param cache the lists read by version; tests pass their own.
   * @param retentionMs how long every key of a chat lives after its last write
   *   (RETENTION_DAYS); 0, the default: for ever.
   */

  constructor(
    readonly redis: Redis | Cluster,
    inbox?: WorkspaceInbox,
    cache: ListsCache = new ListsCache(),
    readonly retentionMs = 0,
  ) {
    this.inbox = inbox ?? new WorkspaceInbox(redis);
    this.cache = cache;
    this.#reads = new SuggestionReads(redis, cache);
    this.start = new StartSteps({ redis, inbox: this.inbox, reads: this.#reads, retentionMs });
  }

  /**
   * The quota checks and the append as one atomic step. With `checkOnly` (the fields are
   * invalid) it only says whether the quotas would allow an offer, so that quota refusals
   * still come before field refusals. With a workspace (the host's, for the chat) the
   * offer records it, and the chat is announced in the workspace's inbox first
   * (store/workspace-inbox.ts), one round trip before the append.
   */
  async offer(
    sessionId: string,
    offer: NewOffer,
    checkOnly: boolean,
    workspaceId = "",
  ): Promise<OfferOutcome> {
    if (checkOnly || workspaceId === "") {
      // No token: the script cannot answer fenced.
      return (await this.#offer(sessionId, offer, checkOnly, "", NO_TOKEN)) as OfferOutcome;
    }
    return announced(this.inbox, workspaceId, sessionId, (at) =>
      this.#offer(sessionId, offer, false, workspaceId, at),
    );
  }

  async #offer(
    sessionId: string,
    offer: NewOffer,
    checkOnly: boolean,
    workspaceId: string,
    at: InboxToken,
  ): Promise<OfferOutcome | Fenced> {
    const keys = sessionKeys(sessionId);
    const reply = await runScript(
      this.redis,
      "offer",
      keys.log,
      keys.projection,
      keys.changes,
      ...offerArgs(
        offer,
        checkOnly,
        workspaceId,
        at.token,
        this.inbox.tellsInScript,
        this.retentionMs,
      ),
    );
    return offerOutcome(sessionId, workspaceId, reply);
  }

  /**
   * Settles an offer if the outcome fits its standing, as one atomic step: started,
   * drafted and dismissed fit an open offer, restored a dismissed one while fewer than
   * the open limit are open. An offer that already stands as asked answers `already`
   * and records nothing.
   */
  async settle(
    sessionId: string,
    suggestionId: string,
    outcome: Outcome,
    chatId = "",
  ): Promise<SettleOutcome> {
    return this.announcedSettle(sessionId, suggestionId, async (at) =>
      settleOutcome(
        await runScript(
          this.redis,
          "settle",
          ...this.#settleArgv(sessionId, suggestionId, outcome, chatId, at),
        ),
      ),
    );
  }

  /** The KEYS and ARGV of lua/settle-3.lua (and settleAndRead-3.lua) for the announcement `at`. */
  #settleArgv(
    sessionId: string,
    suggestionId: string,
    outcome: Outcome,
    chatId: string,
    at: InboxToken,
    dismissal?: DismissalChoice,
  ): [log: string, projection: string, changes: string, ...argv: string[]] {
    const keys = sessionKeys(sessionId);
    return [
      keys.log,
      keys.projection,
      keys.changes,
      ...settleArgs(
        suggestionId,
        outcome,
        chatId,
        at.token,
        at.workspace,
        this.inbox.channelParts,
        this.retentionMs,
        dismissal,
      ),
    ];
  }

  /**
   * `settle`, and the session's lists as they stand right after it, in one MULTI: the
   * answer of a settlement shows the suggestion exactly as that step left it, even
   * while other calls settle the same session.
   */
  async settleAndList(
    sessionId: string,
    suggestionId: string,
    outcome: Outcome,
    chatId = "",
  ): Promise<{ readonly outcome: SettleOutcome; readonly lists: SuggestionLists }> {
    const keys = sessionKeys(sessionId);
    return this.announcedSettle(sessionId, suggestionId, async (at) => {
      const held = this.cache.heldLists(sessionId);
      // One MULTI, then its WAIT when writes wait for replicas (redis/write-confirm.ts).
      const replies = await confirmAfter(this.redis, keys.log, (tracked) =>
        notedLast(
          this.redis
            .multi()
            .settle(...this.#settleArgv(sessionId, suggestionId, outcome, chatId, at))
            .readLists(keys.log, keys.projection, held?.version ?? ""),
          tracked,
        ).exec(),
      );
      if (replies === null) throw new Error("the settle transaction was discarded");
      const [[settleErr, settleReply] = [], [readErr, readReply] = []] = replies;
      if (settleErr) throw settleErr;
      if (readErr) throw readErr;
      const settled = settleOutcome(settleReply as ScriptReply);
      if ("fenced" in settled) return settled;
      const { lists } = this.cache.lists(sessionId, held, readReply as ScriptReply);
      return { outcome: settled, lists };
    });
  }

  /** `settlementAnnounced` (store/inbox-token.ts) in this store's inbox, by its cache. */
  announcedSettle<T>(
    sessionId: string,
    suggestionId: string,
    run: (at: InboxToken) => Promise<T | Fenced>,
  ): Promise<T> {
    return settlementAnnounced(this.inbox, this.cache, sessionId, suggestionId, run);
  }

  /** withdraw_suggestion's atomic step (`withdrawOffer`, lua/withdraw-3.lua). */
  withdraw(sessionId: string, withdrawal: Withdrawal): Promise<WithdrawOutcome> {
    // Announced in the offer's workspace first, as every settlement is.
    return announced(this.inbox, "", sessionId, (at) =>
      withdrawOffer(
        this.redis,
        sessionId,
        withdrawal,
        at,
        this.inbox.channelParts,
        this.retentionMs,
      ),
    );
  }

  /**
   * Erases the chat's suggestions everywhere in Redis (`eraseChat`), and forgets what this
   * instance read of it: the chat then reads as one that never offered anything.
   */
  async erase(sessionId: string): Promise<ErasureReport> {
    const report = await eraseChat(this.redis, this.inbox, sessionId);
    this.cache.forget(sessionId);
    return report;
  }

  /** The accepted settlements after a checked cursor (`settlementsAfter`). */
  settlements(sessionId: string, after: string): Promise<Settlement[]> {
    return settlementsAfter(this.redis, sessionId, after);
  }

  /**
   * `settle`, and the suggestion as it stands right after it, in one script; a person's
   * dismissal may carry a reason and a note (`dismissal`), recorded with it;
   * (lua/settleAndRead-3.lua: settle-3.lua, then readSuggestion-2.lua): as
   * `settleAndList`, reading only that suggestion's records, in one round trip (two
   * more when the offer's workspace inbox must be told first, as for `settle`).
   */
  async settleAndRead(
    sessionId: string,
    suggestionId: string,
    outcome: Outcome,
    chatId = "",
    dismissal?: DismissalChoice,
  ): Promise<{ readonly outcome: SettleOutcome; readonly suggestion: Suggestion | undefined }> {
    return this.announcedSettle(sessionId, suggestionId, async (at) => {
      const [settleReply, readReply] = await runScript(
        this.redis,
        "settleAndRead",
        ...this.#settleArgv(sessionId, suggestionId, outcome, chatId, at, dismissal),
      );
      return this.settledRead(sessionId, suggestionId, settleReply, readReply);
    });
  }

  /** A settle script's reply with the suggestion as it left it (`SuggestionReads.settledRead`). */
  settledRead(
    sessionId: string,
    suggestionId: string,
    settleReply: ScriptReply,
    readReply: ScriptReply,
  ): Fenced | { readonly outcome: SettleOutcome; readonly suggestion: Suggestion | undefined } {
    return this.#reads.settledRead(sessionId, suggestionId, settleReply, readReply);
  }

  /** A session's lists and their version (`SuggestionReads.snapshot`). */
  snapshot(sessionId: string): Promise<ListsSnapshot> {
    return this.#reads.snapshot(sessionId);
  }

  /** One suggestion; undefined when the log holds no such offer (`SuggestionReads.suggestion`). */
  suggestion(sessionId: string, suggestionId: string): Promise<Suggestion | undefined> {
    return this.#reads.suggestion(sessionId, suggestionId);
  }

  /** A session's lists: `snapshot` without the version. */
  async lists(sessionId: string): Promise<SuggestionLists> {
    return (await this.snapshot(sessionId)).lists;
  }

  /** Every record of a session's log, for tests and tools (`SuggestionReads.readLog`). */
  readLog(sessionId: string): Promise<LogRecord[]> {
    return this.#reads.readLog(sessionId);
  }
}
