import {
  RefusalReason,
  Settler,
  type Suggestion,
  SuggestionState,
} from "../../../gen/oda/suggest/v1/suggestion_pb.js";
import { normalizedTitle } from "../../../server/domain/refusals.js";

/** The two duplicate refusals of suggest_task's last check. */
export type DuplicateReason = RefusalReason.DUPLICATE_OPEN | RefusalReason.DUPLICATE_DISMISSED;

/**
 * The duplicate rule (docs/contract.md, SuggestTask's refusals, row 9), a test oracle,
 * read over a chat's suggestions as the fold gives them (fold.ts `foldLog`): a new offer whose
 * normalized title (`normalizedTitle`) equals that of an open offer is DUPLICATE_OPEN;
 * else, equal to that of an offer the person dismissed, DUPLICATE_DISMISSED; an offer
 * the agent withdrew (dismissed by the agent), a drafted and a started one do not count.
 * Undefined when the offer is no duplicate.
 *
 * server/store/lua/offer-3.lua is the rule: it enforces it atomically with the other
 * limits, comparing the normalized titles the service recorded (`nt`); this is the
 * TypeScript reading the tests compare it with, on every sequence of offers, dismissals, restores and
 * withdrawals (test/rpc/duplicate-model.test.ts). An offer recorded before `nt` existed
 * is never compared by the script: such logs are not this function's to read.
 */
export function duplicateOf(
  offers: Iterable<Suggestion>,
  title: string,
): DuplicateReason | undefined {
  const wanted = normalizedTitle(title);
  let dismissed = false;
  for (const offer of offers) {
    if (normalizedTitle(offer.title) !== wanted) continue;
    if (offer.state === SuggestionState.OPEN) return RefusalReason.DUPLICATE_OPEN;
    if (offer.state === SuggestionState.DISMISSED && offer.settledBy !== Settler.AGENT) {
      dismissed = true;
    }
  }
  return dismissed ? RefusalReason.DUPLICATE_DISMISSED : undefined;
}
