import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { expect, test } from "vitest";
import { RefusalReason, SuggestTaskArgsSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { withdrawSuggestionTool } from "../../server/domain/tool-declaration.js";
import { checkToolFields } from "../../server/domain/tool-fields.js";
import { checkArgs } from "../../server/rpc/suggest-task.js";
import {
  fieldText,
  modelFieldVerdict,
  modelSuggestTaskVerdict,
  modelTrim,
  TEXT_PIECES,
} from "../support/field-text-model.js";

/*
 * The field rule's verdicts (shows nothing: empty; a control character, or in a one-line
 * field a bidirectional override: refused) against the model of test/support, over
 * strings of white space, format and control characters, fillers and visible text.
 */

const VERDICT_OF: Partial<Record<RefusalReason, string>> = {
  [RefusalReason.FIELD_EMPTY]: "empty",
  [RefusalReason.FIELD_TOO_LONG]: "too-long",
  [RefusalReason.FIELD_CONTROL_CHARACTER]: "control",
};

/** A title that is sometimes over its limit of 60, so length sits between the two checks. */
const title = fc.oneof(
  { weight: 4, arbitrary: fieldText() },
  { weight: 1, arbitrary: fieldText(4).map((s) => `${s}${"x".repeat(58)}`) },
);

test("suggest_task's first refused field and its reason agree with the model", () => {
  fc.assert(
    fc.property(title, fieldText(), fieldText(), (t, tldr, brief) => {
      const { trimmed, refusal } = checkArgs(
        create(SuggestTaskArgsSchema, { title: t, tldr, brief }),
      );
      const expected = modelSuggestTaskVerdict({ title: t, tldr, brief });
      const actual =
        refusal === undefined
          ? undefined
          : { field: "field" in refusal ? refusal.field : "", verdict: VERDICT_OF[refusal.reason] };
      expect(actual).toEqual(expected);
      expect(trimmed).toEqual({
        title: modelTrim(t),
        tldr: modelTrim(tldr),
        brief: modelTrim(brief),
      });
    }),
    { numRuns: 3000 },
  );
});

test("withdraw_suggestion's title and reason follow the one-line rule of the model", () => {
  fc.assert(
    fc.property(fieldText(), fieldText(), (t, reason) => {
      const refusal = checkToolFields(
        { title: modelTrim(t), reason: modelTrim(reason) },
        withdrawSuggestionTool,
      );
      const titleVerdict = modelFieldVerdict("title", t, 60);
      const expected =
        titleVerdict !== "ok"
          ? { field: "title", verdict: titleVerdict }
          : modelFieldVerdict("reason", reason, 240) !== "ok"
            ? { field: "reason", verdict: modelFieldVerdict("reason", reason, 240) }
            : undefined;
      const actual =
        refusal === undefined
          ? undefined
          : { field: refusal.field, verdict: VERDICT_OF[refusal.reason] };
      expect(actual).toEqual(expected);
    }),
    { numRuns: 1000 },
  );
});

test("every piece of each class, alone and beside a visible letter", () => {
  const invisible = [
    ...TEXT_PIECES.whiteSpace,
    ...TEXT_PIECES.format,
    ...TEXT_PIECES.control,
    ...TEXT_PIECES.filler,
  ];
  for (const piece of invisible) {
    for (const field of ["title", "tldr", "brief"]) {
      expect(modelFieldVerdict(field, piece, 4000)).toBe("empty");
    }
  }
  const verdicts = (piece: string) =>
    ["title", "tldr", "brief"].map((field) => modelFieldVerdict(field, `a${piece}b`, 4000));
  expect(verdicts("\0")).toEqual(["control", "control", "control"]);
  expect(verdicts("\r\n")).toEqual(["control", "control", "ok"]);
  expect(verdicts("\t")).toEqual(["control", "control", "ok"]);
  expect(verdicts("\u202e")).toEqual(["control", "control", "ok"]);
  expect(verdicts("\u2066")).toEqual(["control", "control", "ok"]);
  expect(verdicts("\u200b")).toEqual(["ok", "ok", "ok"]);
  expect(verdicts("\u3164")).toEqual(["ok", "ok", "ok"]);
  expect(modelFieldVerdict("title", "👨\u200d👩\u200d👧", 60)).toBe("ok");
  expect(modelFieldVerdict("title", "❤\ufe0f", 60)).toBe("ok");
});
