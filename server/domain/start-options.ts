import { create } from "@bufbuild/protobuf";
import { Permission } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { type StartOptions, StartOptionsSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { holdsControlCharacter, showsNothing } from "./field-text.js";
import { codePoints } from "./tool-fields.js";

/*
 * The person's choices at Start (docs/contract.md "The person decides, the agent learns"):
 * checked once here, written on the log as record fields, and read back from them.
 */

/** The longest edited brief, in code points: the tool's brief limit. */
export const START_BRIEF_LIMIT = 4000;

/** Start options as checked: trimmed, empty meaning "as the offering chat". */
export interface ChosenOptions {
  readonly model: string;
  readonly permission: Permission;
  /** The person's edit of the brief; empty: the offer's brief, unedited. */
  readonly brief: string;
}

/** No choice made: everything as the offering chat. */
export const NO_OPTIONS: ChosenOptions = Object.freeze({
  model: "",
  permission: Permission.UNSPECIFIED,
  brief: "",
});

/** The lowercase tail of a permission's enum name (`full_access`), as messages and records say it. */
export function permissionWord(permission: Permission): string {
  return (Permission[permission] ?? String(permission)).toLowerCase();
}

const PERMISSIONS_BY_WORD: ReadonlyMap<string, Permission> = new Map(
  [Permission.READ_ONLY, Permission.DEFAULT, Permission.FULL_ACCESS].map((p) => [
    permissionWord(p),
    p,
  ]),
);

/**
 * The request's options checked for what needs no session: the model and the brief
 * trimmed (an edit equal to the offer's brief is no edit), the brief 1 to 4000 code
 * points once trimmed, showing something and holding no control character but tab, line
 * feed and carriage return (the tool's rule for a brief, field-text.ts), the permission
 * one the enum knows. Answers the options, or the INVALID_ARGUMENT message of the first
 * problem.
 */
export function checkStartOptions(
  options: StartOptions | undefined,
): { readonly chosen: ChosenOptions } | { readonly problem: string } {
  if (options === undefined) return { chosen: NO_OPTIONS };
  const model = options.model.trim();
  const { permission } = options;
  if (permission !== Permission.UNSPECIFIED && !(permission in Permission)) {
    return { problem: `start options: permission ${permission} is not a known permission` };
  }
  let brief = "";
  if (options.brief !== "") {
    brief = options.brief.trim();
    if (showsNothing(brief)) return { problem: "start options: brief must not be empty" };
    const got = brief.length > START_BRIEF_LIMIT ? codePoints(brief) : brief.length;
    if (got > START_BRIEF_LIMIT) {
      return {
        problem: `start options: brief must be at most ${START_BRIEF_LIMIT} characters (got ${got})`,
      };
    }
    if (holdsControlCharacter("brief", brief)) {
      return { problem: "start options: brief must not contain control characters" };
    }
  }
  return { chosen: { model, permission, brief } };
}

/**
 * The INVALID_ARGUMENT message when the chosen permission is above the one the new
 * chat would inherit (`Permission` is ordered READ_ONLY < DEFAULT < FULL_ACCESS);
 * undefined when it is not, or none was chosen. A started chat never runs with more
 * permission than the chat that offered it.
 */
export function permissionAbove(chosen: Permission, inherited: Permission): string | undefined {
  if (chosen === Permission.UNSPECIFIED || chosen <= inherited) return undefined;
  return `start options: permission ${permissionWord(chosen)} is above the offering chat's ${permissionWord(inherited)}`;
}

/** Whether any option was chosen. */
export function anyChosen(o: ChosenOptions): boolean {
  return o.model !== "" || o.permission !== Permission.UNSPECIFIED || o.brief !== "";
}

/**
 * The options as fields of a log record (`starting` and `started`): `model`, `perm` (the
 * permission's word) and `brief` (the edit), each only when chosen.
 */
export function optionFields(o: ChosenOptions): string[] {
  const fields: string[] = [];
  if (o.model !== "") fields.push("model", o.model);
  if (o.permission !== Permission.UNSPECIFIED) fields.push("perm", permissionWord(o.permission));
  if (o.brief !== "") fields.push("brief", o.brief);
  return fields;
}

/** The options a record's fields name (`optionFields`); none chosen when it has none. */
export function chosenOf(fields: Readonly<Record<string, string>>): ChosenOptions {
  return {
    model: fields.model ?? "",
    permission: PERMISSIONS_BY_WORD.get(fields.perm ?? "") ?? Permission.UNSPECIFIED,
    brief: fields.brief ?? "",
  };
}

/** `Suggestion.start_options` of a `started` record: unset when it chose nothing. */
export function startOptionsOf(fields: Readonly<Record<string, string>>): StartOptions | undefined {
  const chosen = chosenOf(fields);
  return anyChosen(chosen) ? create(StartOptionsSchema, chosen) : undefined;
}
