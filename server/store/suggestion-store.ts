import type { Cluster, Redis } from "ioredis";
import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type LogRecord,
  offeredSuggestion,
  parseEntries,
  type SuggestionLists,
} from "../domain/fold.js";
import { LIFETIME_LIMIT, OPEN_LIMIT } from "../domain/limits.js";
import { type Outcome, STANDING_WORDS } from "../domain/settlement.js";
import { hostKeys, sessionKeys } from "./keys.js";
import { ListsCache, type ListsSnapshot } from "./lists-cache.js";
import type { ScriptReply } from "./scripts.js";

export type { ListsSnapshot } from "./lists-cache.js";

/** An offer as the tool hands it to the store: fields already trimmed and checked. */
export interface NewOffer {
  readonly id: string;
  readonly turnId: string;
  readonly toolCallId: string;
  readonly title: string;
  readonly tldr: string;
  readonly brief: string;
}

/** What the atomic offer step answered; mirrors the status codes of lua/offer-3.lua. */
export type OfferOutcome =
  | { readonly kind: "recorded" | "duplicate"; readonly suggestion: Suggestion }
  | { readonly kind: "lifetime-limit" | "open-limit" | "turn-limit" | "quota-ok" };

/** The status codes of lua/offer-3.lua. */
enum OfferStatus {
  Recorded = 0,
  Duplicate = 1,
  LifetimeLimit = 2,
  OpenLimit = 3,
  TurnLimit = 4,
  Checked = 5,
}

/** ARGV of lua/offer-3.lua (and of offerInSession-4.lua, which runs it). */
function offerArgs(offer: NewOffer, checkOnly: boolean): string[] {
  return [
    offer.id,
    offer.turnId,
    offer.toolCallId,
    offer.title,
    offer.tldr,
    offer.brief,
    checkOnly ? "check" : "append",
    String(LIFETIME_LIMIT),
    String(OPEN_LIMIT),
  ];
}

/** Reads the reply of lua/offer-3.lua. */
function offerOutcomeOf(sessionId: string, reply: ScriptReply): OfferOutcome {
  const status = reply[0] as OfferStatus;
  switch (status) {
    case OfferStatus.Recorded:
    case OfferStatus.Duplicate: {
      const [record] = parseEntries([[reply[2] as string, reply[3] as string[]]]);
      if (record === undefined) throw new Error("offer script answered no offer record");
      const suggestion = offeredSuggestion(sessionId, record);
      return { kind: status === OfferStatus.Recorded ? "recorded" : "duplicate", suggestion };
    }
    case OfferStatus.LifetimeLimit:
      return { kind: "lifetime-limit" };
    case OfferStatus.OpenLimit:
      return { kind: "open-limit" };
    case OfferStatus.TurnLimit:
      return { kind: "turn-limit" };
    case OfferStatus.Checked:
      return { kind: "quota-ok" };
    default:
      throw new Error(`offer script answered an unknown status ${String(reply[0])}`);
  }
}

/** KEYS and ARGV of lua/settle-3.lua (and of settleAndRead-3.lua, which runs it). */
function settleArgs(
  sessionId: string,
  suggestionId: string,
  outcome: Outcome,
  chatId: string,
): [string, string, string, ...string[]] {
  const keys = sessionKeys(sessionId);
  return [
    keys.log,
    keys.projection,
    keys.changes,
    suggestionId,
    outcome,
    chatId,
    String(OPEN_LIMIT),
  ];
}

/** What the atomic settle step answered; mirrors the status codes of lua/settle-3.lua. */
export interface SettleOutcome {
  readonly kind: "recorded" | "already" | "not-found" | "not-open" | "open-limit";
  /** The offer's standing after the call (before it, for refusals). */
  readonly state: SuggestionState;
  /** The started chat, when the offer stands started. */
  readonly chatId: string;
}

const SETTLE_KINDS = ["recorded", "already", "not-found", "not-open", "open-limit"] as const;

/** Reads the reply of lua/settle-3.lua. */
function settleOutcome(reply: ScriptReply): SettleOutcome {
  const kind = SETTLE_KINDS[reply[0] as number];
  if (kind === undefined) {
    throw new Error(`settle script answered an unknown status ${String(reply[0])}`);
  }
  return {
    kind,
    state: STANDING_WORDS[reply[1] as string] ?? SuggestionState.UNSPECIFIED,
    chatId: reply[2] as string,
  };
}

/**
 * One session's suggestions on Redis: the stream is the truth, the projection hash a
 * cache the scripts keep and rebuild (see lua/includes/projection.lua).
 */
export class SuggestionStore {
  /** What this instance last read of each session, by version (lists-cache.ts). */
  readonly cache: ListsCache;

  constructor(
    readonly redis: Redis | Cluster,
    cache: ListsCache = new ListsCache(),
  ) {
    this.cache = cache;
  }

  /**
   * The quota checks and the append as one atomic step, in one round trip. With
   * `checkOnly` (the fields are invalid) it only says whether the quotas would allow an
   * offer, so that quota refusals still come before field refusals.
   */
  async offer(sessionId: string, offer: NewOffer, checkOnly: boolean): Promise<OfferOutcome> {
    const keys = sessionKeys(sessionId);
    const args = offerArgs(offer, checkOnly);
    const reply = await this.redis.offer(keys.log, keys.projection, keys.changes, ...args);
    return offerOutcomeOf(sessionId, reply);
  }

  /**
   * `offer` behind the embedded host's session check (checks 2 and 3 of the design), in
   * the same script and round trip (lua/offerInSession-4.lua): for a service whose chat
   * host is the embedded one, on this same Redis. Answers `no-session` and
   * `scheduled-task-folder` as the host's session would have.
   */
  async offerInSession(
    sessionId: string,
    offer: NewOffer,
    checkOnly: boolean,
  ): Promise<OfferOutcome | { readonly kind: "no-session" | "scheduled-task-folder" }> {
    const keys = sessionKeys(sessionId);
    const reply = await this.redis.offerInSession(
      keys.log,
      keys.projection,
      keys.changes,
      hostKeys(sessionId).session,
      ...offerArgs(offer, checkOnly),
    );
    if (reply[0] === 100) return { kind: "no-session" };
    if (reply[0] === 101) return { kind: "scheduled-task-folder" };
    return offerOutcomeOf(sessionId, reply);
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
    const reply = await this.redis.settle(...settleArgs(sessionId, suggestionId, outcome, chatId));
    return settleOutcome(reply);
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
    const held = this.cache.heldLists(sessionId);
    const replies = await this.redis
      .multi()
      .settle(...settleArgs(sessionId, suggestionId, outcome, chatId))
      .readLists(keys.log, keys.projection, held?.version ?? "")
      .exec();
    if (replies === null) throw new Error("the settle transaction was discarded");
    const [[settleErr, settleReply] = [], [readErr, readReply] = []] = replies;
    if (settleErr) throw settleErr;
    if (readErr) throw readErr;
    return {
      outcome: settleOutcome(settleReply as ScriptReply),
      lists: this.cache.lists(sessionId, held, readReply as ScriptReply).lists,
    };
  }

  /**
   * `settle`, and the suggestion as it stands right after it, in one script
   * (lua/settleAndRead-3.lua: settle-3.lua, then readSuggestion-2.lua): as
   * `settleAndList`, reading only that suggestion's records, in one round trip.
   */
  async settleAndRead(
    sessionId: string,
    suggestionId: string,
    outcome: Outcome,
    chatId = "",
  ): Promise<{ readonly outcome: SettleOutcome; readonly suggestion: Suggestion | undefined }> {
    const [settleReply, readReply] = await this.redis.settleAndRead(
      ...settleArgs(sessionId, suggestionId, outcome, chatId),
    );
    const suggestion = this.cache.one(sessionId, suggestionId, undefined, readReply);
    return { outcome: settleOutcome(settleReply), suggestion: suggestion ?? undefined };
  }

  /**
   * A session's lists from the projection (lua/readLists-2.lua): O(offers), not
   * O(records), so a chat with a long history of dismissals and restores reads as fast
   * as a fresh one (test/store/list-read.test.ts). The projection is caught up from the stream
   * first, so the answer is the fold of the whole log, as `foldLog(readLog())` gives it.
   */
  async snapshot(sessionId: string): Promise<ListsSnapshot> {
    const keys = sessionKeys(sessionId);
    const held = this.cache.heldLists(sessionId);
    const reply = await this.redis.readLists(keys.log, keys.projection, held?.version ?? "");
    return this.cache.lists(sessionId, held, reply);
  }

  /**
   * One suggestion, reading only its two records (lua/readSuggestion-2.lua), and none
   * when the chat did not change since this instance last read it; undefined when the
   * log holds no such offer. The same fold as `snapshot`'s `byId`.
   */
  async suggestion(sessionId: string, suggestionId: string): Promise<Suggestion | undefined> {
    const keys = sessionKeys(sessionId);
    const held = this.cache.heldOne(sessionId, suggestionId);
    const version = held?.version ?? "";
    const reply = await this.redis.readSuggestion(keys.log, keys.projection, suggestionId, version);
    return this.cache.one(sessionId, suggestionId, held, reply) ?? undefined;
  }

  /** A session's lists: `snapshot` without the version. */
  async lists(sessionId: string): Promise<SuggestionLists> {
    return (await this.snapshot(sessionId)).lists;
  }

  /**
   * Every record of a session's log, in stream order: O(records). The service never
   * reads this way; it is the log `foldLog` reads, for tests and tools.
   */
  async readLog(sessionId: string): Promise<LogRecord[]> {
    const entries = await this.redis.xrange(sessionKeys(sessionId).log, "-", "+");
    return parseEntries(entries);
  }
}
