import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { OPEN_LIMIT } from "./limits.js";

/**
 * The settlement rule (docs/contract.md "A suggestion's states"), as
 * code. The fold (fold.ts) applies it to the log; the Lua projection
 * (store/lua/includes/projection.lua) and the atomic settle step (store/lua/settle-3.lua)
 * apply the same rule to their cache, and test/store/settlement-rule.test.ts runs every
 * (standing, outcome) pair through both and compares.
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

/**
 * The restore ceiling: a dismissed suggestion can be restored while fewer than three
 * suggestions are open; with three open, the restore fails with open-limit.
 */
export function restoreAllowed(openCount: number): boolean {
  return openCount < OPEN_LIMIT;
}

/** Whether a word read from the log is one of the four outcomes. */
export function isOutcome(word: string | undefined): word is Outcome {
  return (OUTCOMES as readonly string[]).includes(word ?? "");
}

/** How a settle request fares against an offer's standing. */
export type SettleAnswer = "recorded" | "already" | "not-open" | "open-limit";

/**
 * The settle RPCs' reading of the rule, which store/lua/settle-3.lua carries out
 * atomically: an outcome that fits is recorded (a restore only below the ceiling); one
 * the offer already stands by (the same outcome; restored: open) answers as it is and
 * records nothing, so a re-sent call is harmless; anything else is not-open.
 */
export function settleAnswer(
  state: SuggestionState,
  outcome: Outcome,
  openCount: number,
): SettleAnswer {
  if (fits(state, outcome)) {
    return outcome === "restored" && !restoreAllowed(openCount) ? "open-limit" : "recorded";
  }
  return state === stateAfter(outcome) ? "already" : "not-open";
}
