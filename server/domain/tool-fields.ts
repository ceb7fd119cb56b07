import { RefusalReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { holdsControlCharacter, showsNothing } from "./field-text.js";
import type { ToolSpec } from "./tool-declaration.js";

/**
 * A refusal of a tool's argument: empty (or showing nothing) after trimming, over its
 * limit, or holding a control character (field-text.ts).
 */
export type FieldRefusal =
  | { reason: RefusalReason.FIELD_EMPTY; field: string; limit: number }
  | { reason: RefusalReason.FIELD_TOO_LONG; field: string; limit: number; got: number }
  | { reason: RefusalReason.FIELD_CONTROL_CHARACTER; field: string; limit: number };

/** Unicode code points of a string: an emoji counts 1. */
export function codePoints(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

/**
 * Checks a tool's trimmed arguments in the order its proto declares them, each for
 * emptiness (a value that shows nothing is empty), then length against the limit of its
 * `(tool_field)` option, then control characters (field-text.ts): the one rule of
 * suggest_task's and withdraw_suggestion's field checks (docs/contract.md, check 4 of withdraw
 * and 8 of suggest_task). Answers the first refusal, or undefined when all fit. A
 * declared field missing from `trimmed` reads as empty.
 */
export function checkToolFields(
  trimmed: Readonly<Record<string, string>>,
  spec: ToolSpec,
): FieldRefusal | undefined {
  for (const field of spec.fields) {
    const value = trimmed[field.name] ?? "";
    if (showsNothing(value)) {
      return { reason: RefusalReason.FIELD_EMPTY, field: field.name, limit: field.maxCodePoints };
    }
    // A string has at most as many code points as UTF-16 units: only a longer one is counted.
    const got = value.length > field.maxCodePoints ? codePoints(value) : value.length;
    if (got > field.maxCodePoints) {
      return {
        reason: RefusalReason.FIELD_TOO_LONG,
        field: field.name,
        limit: field.maxCodePoints,
        got,
      };
    }
    if (holdsControlCharacter(field.name, value)) {
      return {
        reason: RefusalReason.FIELD_CONTROL_CHARACTER,
        field: field.name,
        limit: field.maxCodePoints,
      };
    }
  }
  return undefined;
}
