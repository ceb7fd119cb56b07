import { DismissReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { codePoints } from "./tool-fields.js";

/*
 * The person's reason and note when dismissing a suggestion (docs/contract.md "The person
 * decides, the agent learns"): checked here, written on the `settled` record as `why`
 * (the reason's word) and `note`, and read back from them.
 */

/** The longest note, in code points. */
export const DISMISS_NOTE_LIMIT = 240;

/** A dismissal's reason and note as checked: the note trimmed, '' for none. */
export interface DismissalChoice {
  readonly reason: DismissReason;
  readonly note: string;
}

const WORDS: ReadonlyMap<DismissReason, string> = new Map([
  [DismissReason.NOT_WANTED, "not_wanted"],
  [DismissReason.ALREADY_DONE, "already_done"],
  [DismissReason.DUPLICATE, "duplicate"],
  [DismissReason.OTHER, "other"],
]);

const REASONS: ReadonlyMap<string, DismissReason> = new Map(
  [...WORDS].map(([reason, word]) => [word, reason]),
);

/** The record's word of a reason (`not_wanted`); '' for none. */
export function dismissReasonWord(reason: DismissReason): string {
  return WORDS.get(reason) ?? "";
}

/** The reason a record's `why` names; UNSPECIFIED for none or a word this build does not know. */
export function dismissReasonOf(word: string | undefined): DismissReason {
  return REASONS.get(word ?? "") ?? DismissReason.UNSPECIFIED;
}

/**
 * The request's reason and note checked: the reason one the enum knows (or none), the
 * note trimmed and at most 240 code points. Answers them, or the INVALID_ARGUMENT
 * message of the problem.
 */
export function checkDismissal(
  reason: DismissReason,
  note: string,
): { readonly choice: DismissalChoice } | { readonly problem: string } {
  if (reason !== DismissReason.UNSPECIFIED && !WORDS.has(reason)) {
    return { problem: `dismiss: reason ${reason} is not a known reason` };
  }
  const trimmed = note.trim();
  const got = trimmed.length > DISMISS_NOTE_LIMIT ? codePoints(trimmed) : trimmed.length;
  if (got > DISMISS_NOTE_LIMIT) {
    return {
      problem: `dismiss: note must be at most ${DISMISS_NOTE_LIMIT} characters (got ${got})`,
    };
  }
  return { choice: { reason, note: trimmed } };
}
