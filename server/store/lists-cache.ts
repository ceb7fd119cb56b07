import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type LogRecord,
  type OfferRecords,
  offerSuggestion,
  parseEntries,
  type SuggestionLists,
} from "../domain/fold.js";
import type { ScriptReply } from "./scripts.js";

/** A session's lists and the version of its log they are the fold of. */
export interface ListsSnapshot {
  /**
   * `<id of the last stream entry>:<XLEN>` (`0-0:0` for an empty log): equal versions,
   * equal lists (lua/includes/reads.lua says why).
   */
  readonly version: string;
  readonly lists: SuggestionLists;
}

/** A suggestion held at a version (null: that version has no such offer). */
export interface HeldSuggestion {
  readonly version: string;
  readonly suggestion: Suggestion | null;
}

/** What this instance last read of one session, all of one version. */
interface CachedChat {
  readonly version: string;
  /** The whole lists, once a list read brought them. */
  lists: SuggestionLists | undefined;
  /** Single suggestions a GetSuggestion read brought (null: no such offer). */
  readonly one: Map<string, Suggestion | null>;
  /** The session's folds, of this version and older ones: the same Map for every version. */
  readonly folded: FoldPool;
}

/**
 * The suggestions folded of one session, by the two records each was folded from
 * (`<offer entry id> <settlement entry id>`), the most recently used last: a fold of
 * the same records reuses the object, and so its encoding. An entry id names one
 * record of the stream for good, so equal records, equal suggestion.
 */
type FoldPool = Map<string, Suggestion>;

/** At most this many folded suggestions are kept for reuse per session. */
const POOL_SIZE = 32;

/** Default bound of the cache, in sessions: a chat holds at most 10 short offers. */
export const DEFAULT_CACHED_SESSIONS = 2_000;

/** One stream entry of a script reply as a record; {} (a missing entry) as none. */
function recordOf(entry: ScriptReply[number] | undefined): LogRecord | undefined {
  if (!Array.isArray(entry) || entry.length < 2) return undefined;
  return parseEntries([[entry[0] as string, entry[1] as string[]]])[0];
}

/** Offer and settlement records from `reply[from..]`, two entries per offer. */
export function offersOf(reply: ScriptReply, from: number): OfferRecords[] {
  const offers: OfferRecords[] = [];
  for (let i = from; i + 1 < reply.length; i += 2) {
    const offer = recordOf(reply[i]);
    // An offer record gone from the stream (XDEL by hand) is gone from the fold too.
    if (offer !== undefined) offers.push({ offer, settlement: recordOf(reply[i + 1]) });
  }
  return offers;
}

/**
 * The suggestion of each of these offers (`offerSuggestion`: each is the fold of its
 * own two records), frozen in depth, set in `byId` unless an earlier offer of the fold
 * set its id (as `listsFromOffers` keeps the first); a fold of the same records in
 * `pool` is reused, so a change of one offer makes one new suggestion, and the others
 * keep their objects, and so their encoding.
 */
function foldInto(
  sessionId: string,
  offers: readonly OfferRecords[],
  pool: FoldPool,
  byId: Map<string, Suggestion>,
): Map<string, Suggestion> {
  for (const pair of offers) {
    const records = `${pair.offer.entryId} ${pair.settlement?.entryId ?? ""}`;
    let suggestion = pool.get(records);
    if (suggestion !== undefined) {
      pool.delete(records);
    } else {
      suggestion = offerSuggestion(sessionId, pair);
      if (suggestion === undefined) continue;
      freezeSuggestion(suggestion);
    }
    pool.set(records, suggestion);
    if (pool.size > POOL_SIZE) pool.delete(pool.keys().next().value as string);
    if (!byId.has(suggestion.id)) byId.set(suggestion.id, suggestion);
  }
  return byId;
}

function freezeSuggestion(suggestion: Suggestion): void {
  if (suggestion.offeredAt) Object.freeze(suggestion.offeredAt);
  if (suggestion.settledAt) Object.freeze(suggestion.settledAt);
  if (suggestion.startOptions) Object.freeze(suggestion.startOptions);
  Object.freeze(suggestion);
}

/** The lists of these suggestions, in offer order: open newest first, settled oldest first. */
function listsOf(byId: Map<string, Suggestion>): SuggestionLists {
  const open: Suggestion[] = [];
  const settled: Suggestion[] = [];
  for (const suggestion of byId.values()) {
    (suggestion.state === SuggestionState.OPEN ? open : settled).push(suggestion);
  }
  open.reverse();
  Object.freeze(open);
  Object.freeze(settled);
  return Object.freeze({ open, settled, byId });
}

/**
 * The lists `held` grown by a readLists-2.lua delta: the offers the new entries named,
 * folded (reusing `pool`), in place of the held ones, new ones after them in offer
 * order; every other suggestion is the held object. Equal to the fold of the whole log,
 * since an offer's standing is the fold of its own records (readLists-2.lua says when a
 * delta is sent; test/store/lists-delta.test.ts).
 */
function grownLists(
  sessionId: string,
  held: SuggestionLists,
  offers: readonly OfferRecords[],
  pool: FoldPool,
): SuggestionLists {
  const byId = new Map(held.byId);
  for (const [id, suggestion] of foldInto(sessionId, offers, pool, new Map())) {
    byId.set(id, suggestion);
  }
  return listsOf(byId);
}

/**
 * The lists (and single suggestions) this instance last read of each session, keyed by
 * the version of the log they were folded from, so that a read of an unchanged chat
 * sends Redis the version it has and gets back only "unchanged" (readLists-2.lua,
 * readSuggestion-2.lua) instead of the records. It can never answer an older version:
 * an entry is used only when Redis has just said, in the same script that would
 * otherwise read the records, that the log's version is the entry's. A change made
 * through any instance, a deleted projection or a restarted Redis therefore shows at
 * the next read (test/store/lists-cache.test.ts). Bounded: the least recently used
 * sessions are forgotten past `maxSessions`. What it hands out is frozen: every reader
 * of a version shares the same objects, and the transport may reuse their encoding.
 */
export class ListsCache {
  readonly #chats = new Map<string, CachedChat>();

  constructor(readonly maxSessions = DEFAULT_CACHED_SESSIONS) {}

  /** Sessions held now (for tests). */
  get size(): number {
    return this.#chats.size;
  }

  /** The lists held of a session, if any: send their version with the read. */
  heldLists(sessionId: string): ListsSnapshot | undefined {
    const chat = this.#chats.get(sessionId);
    return chat?.lists === undefined ? undefined : { version: chat.version, lists: chat.lists };
  }

  /** One suggestion held (null: known to be no offer), if any, with its version. */
  heldOne(sessionId: string, suggestionId: string): HeldSuggestion | undefined {
    const chat = this.#chats.get(sessionId);
    const suggestion = chat?.lists
      ? (chat.lists.byId.get(suggestionId) ?? null)
      : chat?.one.get(suggestionId);
    return chat === undefined || suggestion === undefined
      ? undefined
      : { version: chat.version, suggestion };
  }

  /** The lists of a readLists-2.lua reply: `held` when it said they are current. */
  lists(sessionId: string, held: ListsSnapshot | undefined, reply: ScriptReply): ListsSnapshot {
    const version = String(reply[0]);
    const chat = this.#touch(sessionId, version);
    if (held !== undefined && version === held.version && reply.length === 1) {
      chat.lists ??= held.lists;
    }
    if (reply[1] === "delta") {
      // Sent only against the version of `held`, which the read sent as `have`.
      if (held === undefined) throw new Error("readLists answered a delta to no held lists");
      chat.lists ??= grownLists(sessionId, held.lists, offersOf(reply, 2), chat.folded);
    }
    chat.lists ??= listsOf(foldInto(sessionId, offersOf(reply, 1), chat.folded, new Map()));
    return { version, lists: chat.lists };
  }

  /**
   * The lists of a read of the whole log at `version` (store/log-reads.ts: Redis refused
   * the read script, which would have written the projection back), `offers` being
   * `offerRecordsOf` its records: `held` when the version is the held one; else folded
   * as a readLists-2.lua reply of the same offers is, and held for the next read.
   */
  listsFromLog(
    sessionId: string,
    held: ListsSnapshot | undefined,
    version: string,
    offers: readonly OfferRecords[],
  ): ListsSnapshot {
    const chat = this.#touch(sessionId, version);
    if (held !== undefined && version === held.version) chat.lists ??= held.lists;
    chat.lists ??= listsOf(foldInto(sessionId, offers, chat.folded, new Map()));
    return { version, lists: chat.lists };
  }

  /**
   * The workspace of an offer as this instance last folded it, of any version (an
   * offer's workspace is on its record and never changes); undefined when not held.
   * Only a guess to announce in: the settle script checks it.
   */
  workspaceOf(sessionId: string, suggestionId: string): string | undefined {
    const chat = this.#chats.get(sessionId);
    if (chat === undefined) return undefined;
    const known = chat.lists?.byId.get(suggestionId) ?? chat.one.get(suggestionId);
    if (known) return known.workspaceId;
    for (const suggestion of chat.folded.values()) {
      if (suggestion.id === suggestionId) return suggestion.workspaceId;
    }
    return undefined;
  }

  /** The suggestion of a readSuggestion-2.lua reply (null: no such offer). */
  one(
    sessionId: string,
    suggestionId: string,
    held: HeldSuggestion | undefined,
    reply: ScriptReply,
  ): Suggestion | null {
    const version = String(reply[0]);
    const chat = this.#touch(sessionId, version);
    if (held !== undefined && version === held.version && reply.length === 1) {
      if (chat.lists === undefined) chat.one.set(suggestionId, held.suggestion);
      return held.suggestion;
    }
    const known = chat.lists ? chat.lists.byId.get(suggestionId) : chat.one.get(suggestionId);
    if (known !== undefined) return known;
    const byId = foldInto(sessionId, offersOf(reply, 1), chat.folded, new Map());
    const suggestion = byId.get(suggestionId) ?? null;
    chat.one.set(suggestionId, suggestion);
    return suggestion;
  }

  /** Forgets everything held of a session (its suggestions were erased). */
  forget(sessionId: string): void {
    this.#chats.delete(sessionId);
  }

  /** The session's entry for `version`, made the most recent; a new one replaces an older. */
  #touch(sessionId: string, version: string): CachedChat {
    let chat = this.#chats.get(sessionId);
    if (chat !== undefined) this.#chats.delete(sessionId);
    if (chat === undefined || chat.version !== version) {
      chat = { version, lists: undefined, one: new Map(), folded: chat?.folded ?? new Map() };
    }
    this.#chats.set(sessionId, chat);
    if (this.#chats.size > this.maxSessions) {
      const oldest = this.#chats.keys().next().value;
      if (oldest !== undefined) this.#chats.delete(oldest);
    }
    return chat;
  }
}
