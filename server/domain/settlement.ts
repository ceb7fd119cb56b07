import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";

/**
 * The words of the settlement rule (docs/contract.md "A suggestion's states") as the
 * service reads them back from the log and the projection (fold.ts). The rule itself
 * runs in Lua (store/lua/settle-3.lua, the fold in store/lua/includes/); its TypeScript
 * reading is a test oracle (test/support/model/settlement.ts), and
 * test/store/settlement-rule.test.ts runs every (standing, outcome) pair through both.
 */

/** The four outcomes, as a `settled` record names them on the log. */
export const OUTCOMES = ["started", "drafted", "dismissed", "restored"] as const;

/** One of the four outcomes. */
export type Outcome = (typeof OUTCOMES)[number];

/** The outcomes the person's settle RPCs record; `started` belongs to StartSuggestion. */
export type UserOutcome = Exclude<Outcome, "started">;

/** The standings, as the log and the projection name them. */
export const STANDING_WORDS: Readonly<Record<string, SuggestionState>> = Object.freeze({
  open: SuggestionState.OPEN,
  started: SuggestionState.STARTED,
  drafted: SuggestionState.DRAFTED,
  dismissed: SuggestionState.DISMISSED,
});

/** The standing an outcome leaves its offer in (restored: open again). */
export function stateAfter(outcome: Outcome): SuggestionState {
  switch (outcome) {
    case "started":
      return SuggestionState.STARTED;
    case "drafted":
      return SuggestionState.DRAFTED;
    case "dismissed":
      return SuggestionState.DISMISSED;
    case "restored":
      return SuggestionState.OPEN;
  }
}

/**
 * Whether an outcome fits an offer's standing: started, drafted and dismissed apply
 * only to an open offer; restored applies only to a dismissed one. A settlement that
 * does not fit changes nothing (and a settle RPC answers not-open).
 */
export function fits(state: SuggestionState, outcome: Outcome): boolean {
  return outcome === "restored"
    ? state === SuggestionState.DISMISSED
    : state === SuggestionState.OPEN;
}

/** Whether a word read from the log is one of the four outcomes. */
export function isOutcome(word: string | undefined): word is Outcome {
  return (OUTCOMES as readonly string[]).includes(word ?? "");
}
