import fc from "fast-check";

/*
 * A model of the tool fields' text rule, written character by character from the
 * contract's words, apart from the service's regular expressions: trim (JavaScript's
 * white space and line terminators), then a field that shows nothing is empty, one over
 * its limit is too long, and one holding a forbidden character is refused for it.
 */

/** JavaScript's `trim` set: WhiteSpace (TAB, VT, FF, ZWNBSP, every Zs) and LineTerminator. */
const TRIMMED = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
  0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
]);

/** Unicode's White_Space property, listed. */
const WHITE_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
  0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

/** The blank fillers the contract names. */
const FILLERS = new Set([0x115f, 0x1160, 0x2800, 0x3164, 0xffa0]);

/** General category Cc: U+0000-U+001F and U+007F-U+009F. */
const isControl = (cp: number) => cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f);

/** General category Cf, from the Unicode data the runtime carries. */
const isFormat = (cp: number) => /^\p{General_Category=Format}$/u.test(String.fromCodePoint(cp));

/** Bidirectional overrides and isolates: U+202A-U+202E, U+2066-U+2069. */
const isBidiControl = (cp: number) =>
  (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);

const codePointsOf = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0) as number);

/** `value` without the trimmed set at either end. */
export function modelTrim(value: string): string {
  const cps = codePointsOf(value);
  let start = 0;
  let end = cps.length;
  while (start < end && TRIMMED.has(cps[start] as number)) start++;
  while (end > start && TRIMMED.has(cps[end - 1] as number)) end--;
  return String.fromCodePoint(...cps.slice(start, end));
}

/** The model's verdict on one field. */
export type FieldVerdict = "ok" | "empty" | "too-long" | "control";

/** One field's verdict: trimmed, then empty, too long, control character, in that order. */
export function modelFieldVerdict(field: string, raw: string, limit: number): FieldVerdict {
  const cps = codePointsOf(modelTrim(raw));
  const invisible = (cp: number) =>
    WHITE_SPACE.has(cp) || isControl(cp) || isFormat(cp) || FILLERS.has(cp);
  if (cps.every(invisible)) return "empty";
  if (cps.length > limit) return "too-long";
  const forbidden =
    field === "brief"
      ? (cp: number) => isControl(cp) && cp !== 0x09 && cp !== 0x0a && cp !== 0x0d
      : (cp: number) => isControl(cp) || isBidiControl(cp);
  return cps.some(forbidden) ? "control" : "ok";
}

/**
 * The first refused field of suggest_task's arguments, checked in the order title, tldr,
 * brief with their limits 60, 240 and 4000; undefined when all are accepted.
 */
export function modelSuggestTaskVerdict(args: {
  title: string;
  tldr: string;
  brief: string;
}): { field: string; verdict: Exclude<FieldVerdict, "ok"> } | undefined {
  for (const [field, limit] of [
    ["title", 60],
    ["tldr", 240],
    ["brief", 4000],
  ] as const) {
    const verdict = modelFieldVerdict(field, args[field], limit);
    if (verdict !== "ok") return { field, verdict };
  }
  return undefined;
}

/** Characters of each class the rule tells apart, for generated field texts. */
export const TEXT_PIECES = {
  whiteSpace: [" ", "\t", "\n", "\r", "\u000b", "\u00a0", "\u2003", "\u3000", "\u2028", "\u0085"],
  format: [
    "\u200b",
    "\u200c",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u2060",
    "\ufeff",
    "\u00ad",
    "\u061c",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u{e0001}",
    "\ufff9",
  ],
  control: ["\0", "\u0001", "\u0008", "\u001b", "\u007f", "\u009b", "\u009f", "\r\n"],
  filler: ["\u115f", "\u1160", "\u2800", "\u3164", "\uffa0"],
  visible: [
    "a",
    "Z",
    "7",
    "é",
    "中",
    "🚀",
    "\ufe0f",
    "\u0301",
    "👨\u200d👩\u200d👧",
    "❤\ufe0f",
    "-",
  ],
} as const;

/** A field text made of the pieces above, up to `maxPieces` of them. */
export function fieldText(maxPieces = 10): fc.Arbitrary<string> {
  const piece = fc.oneof(...Object.values(TEXT_PIECES).map((pieces) => fc.constantFrom(...pieces)));
  return fc.array(piece, { maxLength: maxPieces }).map((pieces) => pieces.join(""));
}
