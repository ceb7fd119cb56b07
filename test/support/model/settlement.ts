import type { SuggestionState } from "../../../gen/oda/suggest/v1/suggestion_pb.js";
import { OPEN_LIMIT } from "../../../server/domain/limits.js";
import { fits, type Outcome, stateAfter } from "../../../server/domain/settlement.js";

/*
 * The settle rule read in TypeScript, a test oracle: server/store/lua/settle-3.lua is the
 * rule, and test/store/settlement-rule.test.ts runs every (standing, outcome) pair
 * through both and compares.
 */

/**
 * The restore ceiling: a dismissed suggestion can be restored while fewer than three
 * suggestions are open; with three open, the restore fails with open-limit.
 */
export function restoreAllowed(openCount: number): boolean {
  return openCount < OPEN_LIMIT;
}

/** How a settle request fares against an offer's standing. */
export type SettleAnswer = "recorded" | "already" | "not-open" | "open-limit";

/**
 * The settle RPCs' reading of the rule, which server/store/lua/settle-3.lua carries out
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
