import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ROOT } from "../support/sdk-consumer.js";

/*
 * docs/operating.md's Settings table is the one list of the service's settings: every
 * environment variable the service reads has exactly one row, and no row names a
 * variable the service does not read. The roles' RPCs it lists are those the code grants.
 */

const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

/** Every .ts file under server/, as paths from the repository's root. */
function serverFiles(dir = "server"): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return serverFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/**
 * The variables the service reads: `env.NAME`, `env["NAME"]`, `process.env.NAME`, and the
 * readers of server/config-readers.ts, called as `reader(env, "NAME", ...)`.
 */
function variablesRead(): Map<string, string> {
  const found = new Map<string, string>();
  const patterns = [
    /\benv\.([A-Z][A-Z0-9_]+)\b/g,
    /\benv\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]/g,
    /\(\s*env\s*,\s*["']([A-Z][A-Z0-9_]+)["']/g,
  ];
  for (const file of serverFiles()) {
    const text = read(file);
    for (const pattern of patterns) {
      for (const [, name] of text.matchAll(pattern)) found.set(name as string, file);
    }
  }
  return found;
}

/** The rows of the Settings section's table: first cell's variable, then its whole row. */
function settingsRows(): Map<string, string[]> {
  const page = read("docs/operating.md");
  const section = page.split(/^## Settings$/m)[1]?.split(/^## /m)[0] ?? "";
  const rows = new Map<string, string[]>();
  for (const line of section.split("\n")) {
    const name = /^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|/.exec(line)?.[1];
    if (name !== undefined) rows.set(name, [...(rows.get(name) ?? []), line]);
  }
  return rows;
}

describe("docs/operating.md's Settings table", () => {
  test("has one row for each variable the service reads, and none other", () => {
    const code = variablesRead();
    const rows = settingsRows();
    // Guards against a parser that finds nothing: these are read today.
    for (const known of ["PORT", "REDIS_URL", "AUTH_JWKS_URL", "SHUTDOWN_DELAY_MS"]) {
      expect(code.has(known), `${known} found in server/`).toBe(true);
    }
    const missing = [...code.keys()].filter((name) => !rows.has(name)).sort();
    const extra = [...rows.keys()].filter((name) => !code.has(name)).sort();
    expect({ missing, extra }).toEqual({ missing: [], extra: [] });
    const twice = [...rows].filter(([, lines]) => lines.length > 1).map(([name]) => name);
    expect(twice, "variables with more than one row").toEqual([]);
  });

  test("is the page's only table of settings", () => {
    const page = read("docs/operating.md");
    const [before = "", rest = ""] = page.split(/^## Settings$/m);
    const after = rest.split(/^## /m).slice(1).join("");
    const settingRows = `${before}${after}`
      .split("\n")
      .filter((line) => /^\|\s*`[A-Z][A-Z0-9_]+`\s*\|/.test(line));
    expect(settingRows, "table rows of settings outside the Settings section").toEqual([]);
  });

  test("names each role's RPCs as server/pipeline/auth.ts grants them", () => {
    const auth = read("server/pipeline/auth.ts");
    const grants = auth.split("const GRANTS")[1]?.split("};")[0] ?? "";
    const granted = (role: string) => {
      const list = new RegExp(`${role}: \\[([^\\]]*)\\]`).exec(grants)?.[1] ?? "";
      return [...list.matchAll(/SuggestionService\/(\w+)"/g)].map(([, m]) => m).sort();
    };
    const row = settingsRows().get("AUTH_TOKENS")?.[0] ?? "";
    const documented = (role: string) =>
      (new RegExp(`\`${role}\` \\(([^)]*)\\)`).exec(row)?.[1] ?? "").split(/,\s*/).sort();
    expect(granted("agent").length).toBeGreaterThan(0);
    expect(documented("agent")).toEqual(granted("agent"));
    expect(documented("app")).toEqual(granted("app"));
  });
});
