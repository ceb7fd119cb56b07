import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type LogRecord,
  listsFromOffers,
  type OfferRecords,
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
  /** Suggestions of older versions, reused by the fold where their records are the same. */
  readonly pool: readonly (Suggestion | null)[];
}

/** At most this many suggestions of older versions are kept for reuse per session. */
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

/** Which records each suggestion was folded from: `<offer entry id> <settlement entry id>`. */
const recordsOf = new WeakMap<Suggestion, string>();

function freezeSuggestion(suggestion: Suggestion, records: string): Suggestion {
  if (suggestion.offeredAt) Object.freeze(suggestion.offeredAt);
  if (suggestion.settledAt) Object.freeze(suggestion.settledAt);
  recordsOf.set(suggestion, records);
  return Object.freeze(suggestion);
}

/**
 * The fold of these offers (`listsFromOffers`, offer by offer: each suggestion is the
 * fold of its own two records), frozen in depth, reusing every suggestion of `known`
 * folded from the same two records: a change of one offer makes one new suggestion,
 * and the others keep their objects, and so their encoding.
 */
function foldReusing(
  sessionId: string,
  offers: readonly OfferRecords[],
  known: Iterable<Suggestion | null>,
): SuggestionLists {
  const pool = new Map<string, Suggestion>();
  for (const suggestion of known) {
    const records = suggestion === null ? undefined : recordsOf.get(suggestion);
    if (suggestion !== null && records !== undefined) pool.set(records, suggestion);
  }
  const byId = new Map<string, Suggestion>();
  for (const pair of offers) {
    const records = `${pair.offer.entryId} ${pair.settlement?.entryId ?? ""}`;
    let suggestion = pool.get(records);
    if (suggestion === undefined) {
      const [made] = listsFromOffers(sessionId, [pair]).byId.values();
      if (made === undefined) continue;
      suggestion = freezeSuggestion(made, records);
    }
    if (byId.has(suggestion.id)) continue;
    byId.set(suggestion.id, suggestion);
  }
  return listsOf(byId);
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
 * folded (reusing `known`), in place of the held ones, new ones after them in offer
 * order; every other suggestion is the held object. Equal to the fold of the whole log,
 * since an offer's standing is the fold of its own records (readLists-2.lua says when a
 * delta is sent; test/store/lists-delta.test.ts).
 */
function grownLists(
  sessionId: string,
  held: SuggestionLists,
  offers: readonly OfferRecords[],
  known: Iterable<Suggestion | null>,
): SuggestionLists {
  const byId = new Map(held.byId);
  for (const [id, suggestion] of foldReusing(sessionId, offers, known).byId) {
    byId.set(id, suggestion);
  }
  return listsOf(byId);
}

/** Every suggestion an entry holds. */
function* suggestionsOf(chat: CachedChat | undefined): Iterable<Suggestion | null> {
  if (chat === undefined) return;
  yield* chat.pool;
  if (chat.lists !== undefined) yield* chat.lists.byId.values();
  yield* chat.one.values();
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
      chat.lists ??= grownLists(sessionId, held.lists, offersOf(reply, 2), suggestionsOf(chat));
    }
    chat.lists ??= foldReusing(sessionId, offersOf(reply, 1), suggestionsOf(chat));
    return { version, lists: chat.lists };
  }

  /**
   * The workspace of an offer as this instance last folded it, of any version (an
   * offer's workspace is on its record and never changes); undefined when not held.
   * Only a guess to announce in: the settle script checks it.
   */
  workspaceOf(sessionId: string, suggestionId: string): string | undefined {
    for (const suggestion of suggestionsOf(this.#chats.get(sessionId))) {
      if (suggestion?.id === suggestionId) return suggestion.workspaceId;
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
    const lists = foldReusing(sessionId, offersOf(reply, 1), suggestionsOf(chat));
    const suggestion = lists.byId.get(suggestionId) ?? null;
    chat.one.set(suggestionId, suggestion);
    return suggestion;
  }

  /** The session's entry for `version`, made the most recent; a new one replaces an older. */
  #touch(sessionId: string, version: string): CachedChat {
    let chat = this.#chats.get(sessionId);
    if (chat !== undefined) this.#chats.delete(sessionId);
    if (chat === undefined || chat.version !== version) {
      const pool = [...suggestionsOf(chat)].slice(-POOL_SIZE);
      chat = { version, lists: undefined, one: new Map(), pool };
    }
    this.#chats.set(sessionId, chat);
    if (this.#chats.size > this.maxSessions) {
      const oldest = this.#chats.keys().next().value;
      if (oldest !== undefined) this.#chats.delete(oldest);
    }
    return chat;
  }
}
