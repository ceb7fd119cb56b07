import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  DismissReason,
  Settler,
  type Suggestion,
  SuggestionSchema,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { dismissReasonOf } from "./dismissal.js";
import { fits, isOutcome, stateAfter } from "./settlement.js";
import { startOptionsOf } from "./start-options.js";

/** One entry of a session's stream: its id and its fields. */
export interface LogRecord {
  readonly entryId: string;
  readonly fields: Readonly<Record<string, string>>;
}

/** A chat's suggestions as the fold of its log gives them. */
export interface SuggestionLists {
  /** Open offers, newest offer first. */
  readonly open: Suggestion[];
  /** Settled offers, in the order their offers appeared. */
  readonly settled: Suggestion[];
  /** Every offer by id. */
  readonly byId: ReadonlyMap<string, Suggestion>;
}

/**
 * Who made a `settled` record: `by` `agent` is the offering agent's (withdraw_suggestion);
 * anything else, and no `by` at all (records written before the field existed), is the
 * person's.
 */
export function settlerOf(record: LogRecord): Settler {
  return record.fields.by === "agent" ? Settler.AGENT : Settler.PERSON;
}

/** The time of a record: its `time` field in ms, else the ms part of its stream id. */
export function recordTime(record: LogRecord) {
  const raw = record.fields.time;
  const time = raw === undefined || raw.trim() === "" ? Number.NaN : Number(raw);
  const ms = Number.isSafeInteger(time) ? time : Number(record.entryId.split("-")[0]);
  return timestampFromMs(Number.isSafeInteger(ms) ? ms : 0);
}

/**
 * The suggestion an `offered` record makes: open, with the record's fields as they are
 * (the character limits are not checked, so a log written under older limits opens).
 * The one place where an offer record becomes a `Suggestion`.
 */
export function offeredSuggestion(sessionId: string, record: LogRecord): Suggestion {
  const f = record.fields;
  return create(SuggestionSchema, {
    id: f.id ?? "",
    sessionId,
    turnId: f.turn ?? "",
    title: f.title ?? "",
    tldr: f.tldr ?? "",
    brief: f.brief ?? "",
    state: SuggestionState.OPEN,
    offeredAt: recordTime(record),
    workspaceId: f.ws ?? "",
  });
}

/**
 * Applies a `settled` record to its offer when the outcome fits (settlement.ts `fits`);
 * anything else changes nothing. Answers whether it fitted (the fold accepted it). The
 * one place where a settlement changes a `Suggestion`; the suggestion it leaves depends
 * on the offer and this record only, which ListSettlements relies on
 * (server/domain/settlements.ts).
 */
export function applySettlement(offer: Suggestion, record: LogRecord): boolean {
  const outcome = record.fields.outcome;
  if (!isOutcome(outcome) || !fits(offer.state, outcome)) return false;
  const restored = outcome === "restored";
  offer.state = stateAfter(outcome);
  offer.chatId = outcome === "started" ? (record.fields.chat ?? "") : "";
  offer.settledAt = restored ? undefined : recordTime(record);
  offer.settledBy = restored ? Settler.UNSPECIFIED : settlerOf(record);
  offer.startOptions = outcome === "started" ? startOptionsOf(record.fields) : undefined;
  const person = outcome === "dismissed" && offer.settledBy === Settler.PERSON;
  offer.dismissReason = person ? dismissReasonOf(record.fields.why) : DismissReason.UNSPECIFIED;
  offer.dismissNote = person ? (record.fields.note ?? "") : "";
  return true;
}

/** Splits offers (in offer order) into the two lists. */
function listsOf(byId: Map<string, Suggestion>): SuggestionLists {
  const open: Suggestion[] = [];
  const settled: Suggestion[] = [];
  for (const suggestion of byId.values()) {
    (suggestion.state === SuggestionState.OPEN ? open : settled).push(suggestion);
  }
  open.reverse();
  return { open, settled, byId };
}

/** An offer's record and the record of the settlement it stands by, if any. */
export interface OfferRecords {
  readonly offer: LogRecord;
  /** The `settled` record that made it started, drafted or dismissed; none while open. */
  readonly settlement: LogRecord | undefined;
}

/**
 * The lists from each offer's record and its standing settlement, in offer order, as
 * lua/readLists-2.lua answers them from the projection: O(offers), however many
 * records the log holds. It must equal the fold of the whole log, the test oracle
 * test/support/model/fold.ts `foldLog` (test/store/list-read.test.ts compares them on
 * random logs).
 */
export function listsFromOffers(
  sessionId: string,
  offers: Iterable<OfferRecords>,
): SuggestionLists {
  const byId = new Map<string, Suggestion>();
  for (const pair of offers) {
    const suggestion = offerSuggestion(sessionId, pair);
    if (suggestion !== undefined && !byId.has(suggestion.id)) byId.set(suggestion.id, suggestion);
  }
  return listsOf(byId);
}

/** One offer's suggestion, folded from its two records; undefined for an offer of no id. */
export function offerSuggestion(
  sessionId: string,
  { offer, settlement }: OfferRecords,
): Suggestion | undefined {
  const suggestion = offeredSuggestion(sessionId, offer);
  if (suggestion.id === "") return undefined;
  if (settlement !== undefined) applySettlement(suggestion, settlement);
  return suggestion;
}

/**
 * Each offer of a log with the record of the settlement it stands by (none while open),
 * in offer order: the pairs lua/readLists-2.lua answers from the projection, here
 * folded from every record by `foldLog`'s rules, for a read that may not write the
 * projection back (Redis refusing writes). `listsFromOffers` of them equals `foldLog`:
 * an accepted restore reopens the offer, which then stands by no settlement.
 */
export function offerRecordsOf(records: Iterable<LogRecord>): OfferRecords[] {
  const offers = new Map<string, { offer: LogRecord; settlement: LogRecord | undefined }>();
  const standing = new Map<string, Suggestion>();
  for (const record of records) {
    const id = record.fields.id;
    if (id === undefined || id === "") continue;
    if (record.fields.type === "offered") {
      if (offers.has(id)) continue;
      offers.set(id, { offer: record, settlement: undefined });
      standing.set(id, offeredSuggestion("", record));
    } else if (record.fields.type === "settled") {
      const suggestion = standing.get(id);
      const pair = offers.get(id);
      if (suggestion === undefined || pair === undefined) continue;
      if (!applySettlement(suggestion, record)) continue;
      pair.settlement = suggestion.state === SuggestionState.OPEN ? undefined : record;
    }
  }
  return [...offers.values()];
}

/** Turns a stream reply (`[[id, [k, v, ...]], ...]`) into records. */
export function parseEntries(entries: [string, string[]][]): LogRecord[] {
  return entries.map(([entryId, flat]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) {
      fields[flat[i] as string] = flat[i + 1] as string;
    }
    return { entryId, fields };
  });
}
