import { create } from "@bufbuild/protobuf";
import {
  type Settlement,
  SettlementOutcome,
  SettlementSchema,
  type Suggestion,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
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
