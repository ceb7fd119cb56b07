import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
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
   * equal lists (lua/readLists-2.lua says why).
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
}

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

/** Freezes the lists in depth: they are shared by every reader of their version. */
function freezeLists(lists: SuggestionLists): SuggestionLists {
  for (const suggestion of lists.byId.values()) {
    if (suggestion.offeredAt) Object.freeze(suggestion.offeredAt);
    if (suggestion.settledAt) Object.freeze(suggestion.settledAt);
    Object.freeze(suggestion);
  }
  Object.freeze(lists.open);
  Object.freeze(lists.settled);
  return Object.freeze(lists);
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
    chat.lists ??= freezeLists(listsFromOffers(sessionId, offersOf(reply, 1)));
    return { version, lists: chat.lists };
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
    const lists = freezeLists(listsFromOffers(sessionId, offersOf(reply, 1)));
    const suggestion = lists.byId.get(suggestionId) ?? null;
    chat.one.set(suggestionId, suggestion);
    return suggestion;
  }

  /** The session's entry for `version`, made the most recent; a new one replaces an older. */
  #touch(sessionId: string, version: string): CachedChat {
    let chat = this.#chats.get(sessionId);
    if (chat !== undefined) this.#chats.delete(sessionId);
    if (chat === undefined || chat.version !== version) {
      chat = { version, lists: undefined, one: new Map() };
    }
    this.#chats.set(sessionId, chat);
    if (this.#chats.size > this.maxSessions) {
      const oldest = this.#chats.keys().next().value;
      if (oldest !== undefined) this.#chats.delete(oldest);
    }
    return chat;
  }
}
