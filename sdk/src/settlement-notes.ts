import {
  DismissReason,
  type Settlement,
  SettlementOutcome,
  Settler,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";

/** The words of a dismissal's reason in the line, as the contract fixes them. */
const REASON_WORDS: Readonly<Partial<Record<DismissReason, string>>> = {
  [DismissReason.NOT_WANTED]: "not wanted",
  [DismissReason.ALREADY_DONE]: "already done",
  [DismissReason.DUPLICATE]: "a duplicate",
  [DismissReason.OTHER]: "other",
};

/** The person's dismissal: with a reason, its words and the note; without one, as before. */
function personDismissal(title: string, settlement: Settlement): string {
  const words = REASON_WORDS[settlement.dismissReason];
  if (words === undefined)
    return `The user dismissed your suggestion "${title}"; do not offer it again.`;
  const note = settlement.dismissNote === "" ? "" : ` Their note: ${settlement.dismissNote}`;
  return `The user dismissed your suggestion "${title}" as ${words}; do not offer it again.${note}`;
}

/** The line that tells the offering model of one settlement, in the contract's words (docs/sdk.md). */
function noteOf(settlement: Settlement): string | undefined {
  const title = settlement.suggestion?.title ?? "";
  switch (settlement.outcome) {
    case SettlementOutcome.STARTED:
      return `The user started your suggestion "${title}" as a new chat.`;
    case SettlementOutcome.DRAFTED:
      return `The user saved your suggestion "${title}" as a draft.`;
    case SettlementOutcome.DISMISSED:
      return settlement.settledBy === Settler.AGENT
        ? `You withdrew your suggestion "${title}".`
        : personDismissal(title, settlement);
    case SettlementOutcome.RESTORED:
      return `The user restored your suggestion "${title}"; it waits again.`;
    default:
      return undefined;
  }
}

/**
 * The lines a runtime puts in front of the offering model at its next turn, one per
 * settlement of `ListSettlements`, in their order: started (as a new chat), saved as a
 * draft, dismissed by the user (do not offer it again), withdrawn by the agent itself,
 * restored (it waits again). A settlement of an outcome this SDK does not know adds no
 * line. Ask again with the response's `cursor` to hear only what is new.
 *
 * ```ts
 * const { settlements, cursor: next } = await client.listSettlements({ sessionId, after: cursor });
 * const notes = settlementNotes(settlements); // e.g. `The user started your suggestion "Fix CI" as a new chat.`
 * ```
 */
export function settlementNotes(settlements: readonly Settlement[]): string[] {
  const notes: string[] = [];
  for (const settlement of settlements) {
    const note = noteOf(settlement);
    if (note !== undefined) notes.push(note);
  }
  return notes;
}
