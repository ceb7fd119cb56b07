import { create } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { RefusalReason, SuggestTaskArgsSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { isValidId } from "../../server/domain/ids.js";
import { suggestTaskTool } from "../../server/domain/tool-declaration.js";
import { checkArgs, codePoints } from "../../server/rpc/suggest-task.js";

const args = (init: { title?: string; tldr?: string; brief?: string }) =>
  create(SuggestTaskArgsSchema, { title: "t", tldr: "r", brief: "b", ...init });

test("the tool's descriptions and limits are read from the proto's options", () => {
  expect(suggestTaskTool).toEqual({
    name: "suggest_task",
    description:
      "Offer one out-of-scope follow-up the user can start in a new chat; never for work you can do now.",
    fields: [
      {
        name: "title",
        jsonName: "title",
        description: "Imperative title, at most 60 characters.",
        maxCodePoints: 60,
      },
      {
        name: "tldr",
        jsonName: "tldr",
        description: "Why it is worth doing, at most 240 characters.",
        maxCodePoints: 240,
      },
      {
        name: "brief",
        jsonName: "brief",
        description: "Self-contained instructions for the new chat, at most 4000 characters.",
        maxCodePoints: 4000,
      },
    ],
  });
});

test("code points, not UTF-16 units: an emoji counts 1, a combining mark counts 1", () => {
  expect(codePoints("")).toBe(0);
  expect(codePoints("🚀")).toBe(1);
  expect(codePoints("👩‍💻")).toBe(3); // woman, zero-width joiner, laptop
  expect(codePoints("e\u0301")).toBe(2);
});

test("a limit counts code points whether a field's UTF-16 length is over it or not", () => {
  expect(checkArgs(args({ title: "🚀".repeat(60) })).refusal).toBeUndefined();
  expect(checkArgs(args({ title: "x".repeat(60) })).refusal).toBeUndefined();
  for (const title of ["🚀".repeat(61), "x".repeat(61), `${"x".repeat(59)}🚀🚀`]) {
    expect(checkArgs(args({ title })).refusal).toEqual({
      reason: RefusalReason.FIELD_TOO_LONG,
      field: "title",
      limit: 60,
      got: 61,
    });
  }
});

test("fields are trimmed with JavaScript trim before they are checked", () => {
  const { trimmed, refusal } = checkArgs(args({ title: "\u2003 Title \ufeff", tldr: "\n r\t" }));
  expect(refusal).toBeUndefined();
  expect(trimmed).toEqual({ title: "Title", tldr: "r", brief: "b" });
});

test("the first failing field answers: title, tldr, brief; empty before too long", () => {
  expect(checkArgs(args({ title: " ", tldr: "" })).refusal).toEqual({
    reason: RefusalReason.FIELD_EMPTY,
    field: "title",
    limit: 60,
  });
  expect(checkArgs(args({ tldr: "x".repeat(241), brief: "" })).refusal).toEqual({
    reason: RefusalReason.FIELD_TOO_LONG,
    field: "tldr",
    limit: 240,
    got: 241,
  });
  expect(checkArgs(undefined).refusal).toMatchObject({ field: "title" });
});

test("ids: 1 to 128 of [A-Za-z0-9._:-]", () => {
  expect(isValidId("a")).toBe(true);
  expect(isValidId("A-z_0.9:x")).toBe(true);
  expect(isValidId("x".repeat(128))).toBe(true);
  for (const bad of ["", "x".repeat(129), "a b", "{a}", "a*", "é", "a\n"]) {
    expect(isValidId(bad)).toBe(false);
  }
});
