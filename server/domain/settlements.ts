import { create } from "@bufbuild/protobuf";
import {
  type Settlement,
  SettlementOutcome,
  SettlementSchema,
  type Suggestion,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { compareStreamIds } from "./cursor.js";
import {
  applySettlement,
  type LogRecord,
  offeredSuggestion,
  recordTime,
  settlerOf,
} from "./fold.js";

const OUTCOMES: Readonly<Record<string, SettlementOutcome>> = {
  started: SettlementOutcome.STARTED,
  drafted: SettlementOutcome.DRAFTED,
  dismissed: SettlementOutcome.DISMISSED,
  restored: SettlementOutcome.RESTORED,
};

/**
 * The suggestion as it stood right after a settlement the fold accepted. It depends on
 * the offer's record and that settlement's only: an accepted started, drafted or
 * dismissed record settles an open offer (whose fields are the offer record's), and an
 * accepted restore reopens a dismissed one. So ListSettlements needs no fold of the
 * records before its cursor (lua/settlements-2.lua).
 */
export function suggestionAfter(
  sessionId: string,
  offer: LogRecord,
  settlement: LogRecord,
): Suggestion {
  const suggestion = offeredSuggestion(sessionId, offer);
  if (settlement.fields.outcome === "restored") suggestion.state = SuggestionState.DISMISSED;
  applySettlement(suggestion, settlement);
  return suggestion;
}

/** One accepted settlement as ListSettlements answers it, its stream id as the cursor. */
export function settlementOf(
  sessionId: string,
  offer: LogRecord,
  settlement: LogRecord,
): Settlement {
  const outcome = OUTCOMES[settlement.fields.outcome ?? ""] ?? SettlementOutcome.UNSPECIFIED;
  const suggestion = suggestionAfter(sessionId, offer, settlement);
  return create(SettlementSchema, {
    suggestion,
    outcome,
    // As the suggestion right after it stands: set for STARTED and DISMISSED only.
    ...(suggestion.startOptions ? { startOptions: suggestion.startOptions } : {}),
    dismissReason: suggestion.dismissReason,
    dismissNote: suggestion.dismissNote,
    settledBy: settlerOf(settlement),
    chatId: outcome === SettlementOutcome.STARTED ? (settlement.fields.chat ?? "") : "",
    settledAt: recordTime(settlement),
    cursor: settlement.entryId,
  });
}

/**
 * A log's settlements read from every record: every record folded by the log's
 * rules (the first `offered` record of an id opens it, a `settled` record counts only
 * when it fits its offer's standing), keeping the accepted settlements recorded after
 * `after` (empty: all), in log order. O(records): the service reads through the
 * projection, and this only while Redis refuses writes (store/agent-settlements.ts);
 * test/store/settlements-read.test.ts holds both equal.
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
