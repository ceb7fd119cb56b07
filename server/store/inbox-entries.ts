import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { offeredSuggestion } from "../domain/fold.js";

/** One open offer as the inbox lists it: its place in the order and the suggestion. */
export interface InboxEntry {
  readonly member: string;
  readonly suggestion: Suggestion;
  /** The offer's record as the index keeps it: JSON `[entry id, fields]`. */
  readonly doc: string;
}

/** One page of a workspace's inbox. */
export interface InboxPage {
  /** Open suggestions, newest offer first. */
  readonly entries: InboxEntry[];
  /** The member to read on after; empty when there is nothing after this page. */
  readonly next: string;
}

/** The most entries an `InboxEntries` keeps at once. */
const MADE_ENTRIES = 20_000;

/**
 * The entries an inbox made from the records its index keeps, by member. The suggestion
 * an offer's record makes depends on that record only, so an entry already made from the
 * very same record is answered again (a page read then parses and builds nothing for
 * offers it has seen, and the same suggestion object is answered for the same record,
 * which lets the response's encoding be kept by object: rpc/encoded-response.ts): the
 * cache can never answer another record than the one read. The oldest go first beyond
 * 20,000. One per inbox, so that it lives and goes with the inbox that reads.
 */
export class InboxEntries {
  readonly #made = new Map<string, InboxEntry>();

  /** The entry of `member` of the chat `sessionId` from the index's record `doc`. */
  of(sessionId: string, member: string, doc: string): InboxEntry {
    const made = this.#made.get(member);
    if (made !== undefined && made.doc === doc) return made;
    const [entryId, fields] = JSON.parse(doc) as [string, Record<string, string>];
    const entry = { member, suggestion: offeredSuggestion(sessionId, { entryId, fields }), doc };
    if (this.#made.size >= MADE_ENTRIES) {
      this.#made.delete(this.#made.keys().next().value as string);
    }
    this.#made.set(member, entry);
    return entry;
  }
}

/** The most pages one instance keeps, least recently read first out. */
const KEPT_PAGES = 1_000;

/**
 * The pages an inbox answered, by what was asked, with the index's version they were read
 * at: a page asked again at the same version is answered without reading the records.
 */
export class KeptPages {
  readonly #pages = new Map<string, { readonly version: string; readonly page: InboxPage }>();

  /** The page kept for `asked`, with its version; undefined when none is. */
  get(asked: string): { readonly version: string; readonly page: InboxPage } | undefined {
    return this.#pages.get(asked);
  }

  /** Keeps `page` for `asked` at `version`, the least recently kept going first. */
  keep(asked: string, version: string, page: InboxPage): void {
    this.#pages.delete(asked);
    if (this.#pages.size >= KEPT_PAGES) {
      this.#pages.delete(this.#pages.keys().next().value as string);
    }
    this.#pages.set(asked, { version, page });
  }
}
