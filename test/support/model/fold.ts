import {
  type Settlement,
  type Suggestion,
  SuggestionState,
} from "../../../gen/oda/suggest/v1/suggestion_pb.js";
import { compareStreamIds } from "../../../server/domain/cursor.js";
import {
  applySettlement,
  type LogRecord,
  offeredSuggestion,
  type SuggestionLists,
} from "../../../server/domain/fold.js";
import { settlementOf } from "../../../server/domain/settlements.js";

/*
 * The fold of a whole log in TypeScript, a test oracle: the service folds in Lua
 * (server/store/lua/includes/) and reads through the projection; the tests compare what
 * it answers with these readings of every record.
 */

/**
 * Folds a session's log into its lists: the reading of the whole log in TypeScript, a
 * test oracle. The service's fold runs in Lua (server/store/lua/includes/, caught up in
 * the projection, which server/domain/fold.ts `listsFromOffers` reads); it reads every
 * record, so the tests compare the service's lists with it:
 * - an `offered` record with an id not seen before is an open offer; a repeated id is
 *   ignored;
 * - a `settled` record changes its offer only when the outcome fits (server/domain/settlement.ts):
 *   a settlement that names no offer, or does not fit, changes nothing; its `by` says
 *   who settled it (`agent`, else the person's, also when absent); a `started` one
 *   carries the Start's options (`model`, `perm`, `brief`), a person's `dismissed` one
 *   the reason (`why`) and note (`note`), each absent when not given;
 * - the character limits are not checked, so a log written under older limits opens;
 * - records of other kinds are skipped, so the stream can be shared with other writers.
 */
export function foldLog(sessionId: string, records: Iterable<LogRecord>): SuggestionLists {
  const byId = new Map<string, Suggestion>();
  for (const record of records) {
    const id = record.fields.id;
    if (id === undefined || id === "") continue;
    if (record.fields.type === "offered") {
      if (!byId.has(id)) byId.set(id, offeredSuggestion(sessionId, record));
    } else if (record.fields.type === "settled") {
      const offer = byId.get(id);
      if (offer !== undefined) applySettlement(offer, record);
    }
  }
  const open: Suggestion[] = [];
  const settled: Suggestion[] = [];
  for (const suggestion of byId.values()) {
    (suggestion.state === SuggestionState.OPEN ? open : settled).push(suggestion);
  }
  open.reverse();
  return { open, settled, byId };
}

/**
 * The reading of a log's settlements, a test oracle: every record folded by `foldLog`'s
 * rules (the first `offered` record of an id opens it, a `settled` record counts only
 * when it fits its offer's standing), keeping the accepted settlements recorded after
 * `after` (empty: all), in log order. O(records); the service reads through the
 * projection instead, and test/store/settlements-read.test.ts holds both equal.
 */
export function foldSettlements(
  sessionId: string,
  records: Iterable<LogRecord>,
  after = "",
): Settlement[] {
  const offers = new Map<string, { record: LogRecord; standing: Suggestion }>();
  const settlements: Settlement[] = [];
  for (const record of records) {
    const id = record.fields.id;
    if (id === undefined || id === "") continue;
    if (record.fields.type === "offered") {
      if (!offers.has(id))
        offers.set(id, { record, standing: offeredSuggestion(sessionId, record) });
    } else if (record.fields.type === "settled") {
      const offer = offers.get(id);
      if (offer === undefined || !applySettlement(offer.standing, record)) continue;
      if (after === "" || compareStreamIds(record.entryId, after) > 0) {
        settlements.push(settlementOf(sessionId, offer.record, record));
      }
    }
  }
  return settlements;
}
