import { type Suggestion, SuggestionState } from "../../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  applySettlement,
  type LogRecord,
  offeredSuggestion,
  type SuggestionLists,
} from "../../../server/domain/fold.js";

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

/** The settlements of a whole log, as the service reads them while Redis refuses writes. */
export { foldSettlements } from "../../../server/domain/settlements.js";
