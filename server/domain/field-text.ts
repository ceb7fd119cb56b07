/*
 * What a tool argument's text may hold. A model reads the title back in the success line
 * and the person reads every field in the app, so text nobody can see counts as empty, and
 * characters that forge lines or reorder what is shown are refused. One rule for every
 * tool field (suggest_task's and withdraw_suggestion's), applied by tool-fields.ts.
 */

/**
 * Characters that show nothing: white space, format characters (Unicode Cf: zero width
 * space, joiners, bidirectional marks...), control characters (Cc) and the blank fillers
 * U+115F, U+1160, U+2800, U+3164 and U+FFA0, which fonts draw as nothing.
 */
const INVISIBLE_ONLY = /^[\p{White_Space}\p{Cf}\p{Cc}\u115F\u1160\u2800\u3164\uFFA0]*$/u;

/** Any control character, or a bidirectional override or isolate (U+202A-U+202E, U+2066-U+2069). */
const CONTROL_OR_BIDI = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;

/** Any control character but tab, line feed and carriage return. */
const CONTROL_BUT_LINE_BREAKS = /(?![\t\n\r])\p{Cc}/u;

/**
 * The fields that are several lines of text, where tab, line feed and carriage return
 * are allowed (and a bidirectional override is, as in any document): suggest_task's
 * brief, which becomes the new chat's first message.
 */
const MULTILINE_FIELDS: ReadonlySet<string> = new Set(["brief"]);

/**
 * Whether a trimmed value shows nothing: every character white space, a format or control
 * character, or a blank filler. The empty string shows nothing. Such a value is refused
 * as empty (`<tool>: <field> must not be empty`), so an offer always has a visible title.
 * A value with anything visible beside joiners and variation selectors (an emoji
 * sequence) shows something.
 */
export function showsNothing(value: string): boolean {
  return INVISIBLE_ONLY.test(value);
}

/**
 * Whether a field's value holds a character it may not: in a one-line field (title, tldr,
 * withdraw_suggestion's title and reason) any control character, or a bidirectional
 * override or isolate, which would forge lines or reorder the text a model or a person
 * reads; in a multi-line field (brief) a control character other than tab, line feed and
 * carriage return. Refused as `<tool>: <field> must not contain control characters`.
 */
export function holdsControlCharacter(field: string, value: string): boolean {
  return (MULTILINE_FIELDS.has(field) ? CONTROL_BUT_LINE_BREAKS : CONTROL_OR_BIDI).test(value);
}
