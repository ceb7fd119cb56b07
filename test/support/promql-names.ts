/** PromQL's keywords and aggregation modifiers: never a metric's name. */
const KEYWORDS = new Set(
  ["by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless"].concat([
    "bool",
    "offset",
    "inf",
    "nan",
  ]),
);

/** `by (...)`, `on (...)` and their kin: label lists. */
const LABEL_LISTS = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;

/**
 * The metric names a PromQL expression reads: the identifiers left once strings, label
 * matchers, ranges and label lists are taken out, that are neither a function (followed
 * by `(`) nor a keyword. Enough for the expressions a rule file or a dashboard holds;
 * the expression itself is checked by Prometheus's own parser.
 */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, "{}")
    .replace(/\[[^\]]*\]/g, "[]")
    .replace(LABEL_LISTS, " ");
  const names = new Set<string>();
  for (const m of bare.matchAll(
    /(?<![0-9A-Za-z_:.])[A-Za-z_:][A-Za-z0-9_:]*(?!\s*\(|[A-Za-z0-9_:])/g,
  )) {
    if (!KEYWORDS.has(m[0].toLowerCase())) names.add(m[0]);
  }
  return [...names];
}

/** The label names an expression groups or matches by (`by (a, b)`, `on (c)`). */
export function groupingLabelsIn(expr: string): string[] {
  const labels = new Set<string>();
  for (const m of expr.matchAll(LABEL_LISTS)) {
    for (const label of (m[1] as string).split(","))
      if (label.trim() !== "") labels.add(label.trim());
  }
  return [...labels];
}

/**
 * Every series name of a Prometheus text exposition (/metrics), from its TYPE lines and
 * samples, and every label name its samples carry.
 */
export function exposition(text: string): { names: Set<string>; labels: Set<string> } {
  const names = new Set<string>();
  const labels = new Set<string>();
  for (const line of text.split("\n")) {
    // A labelled series with no sample yet is named by its TYPE line only.
    const type = /^# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) (\w+)/.exec(line);
    if (type !== null) {
      const [, name, kind] = type as unknown as [string, string, string];
      names.add(name);
      const parts = { histogram: ["_bucket", "_sum", "_count"], summary: ["_sum", "_count"] }[kind];
      for (const suffix of parts ?? []) names.add(`${name}${suffix}`);
    }
    if (line === "" || line.startsWith("#")) continue;
    const name = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(line)?.[0];
    if (name !== undefined) names.add(name);
    const braces = /\{(.*)\}/.exec(line)?.[1] ?? "";
    for (const m of braces.matchAll(/([A-Za-z_][A-Za-z0-9_]*)="/g)) labels.add(m[1] as string);
  }
  return { names, labels };
}
