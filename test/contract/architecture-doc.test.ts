import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ROOT } from "../support/sdk-consumer.js";

/*
 * docs/architecture.md draws a call's path and the keys' scripts by file name: every
 * file it names exists, so the drawing cannot silently outlive a move or a rename.
 */

const PAGE = "docs/architecture.md";
const FILE = /(?:[\w.-]+\/)*\.?[\w-]+(?:\.[\w-]+)*\.(?:ts|lua|cjs|mjs|md|proto|json)\b/g;
const SKIP = new Set(["node_modules", ".git", "dist", ".data", "gen"]);

/** The base names of the repository's files (gen/ and what is built or installed left out). */
function baseNames(dir = ROOT, into = new Set<string>()): Set<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    if (entry.isDirectory()) baseNames(join(dir, entry.name), into);
    else into.add(entry.name);
  }
  return into;
}

describe(PAGE, () => {
  const page = readFileSync(join(ROOT, PAGE), "utf8");
  const named = [...new Set(page.match(FILE) ?? [])];

  test("names the files of a SuggestTask's path and the scripts", () => {
    // Guards against a pattern that finds nothing.
    for (const path of ["server/rpc/suggest-task.ts", "server/store/lua/offer-3.lua"]) {
      expect(named).toContain(path);
    }
  });

  test("every path it names exists in the repository", () => {
    // A link (`../README.md`) is relative to docs/, a path in the text to the root.
    const at = (path: string) =>
      path.startsWith("../") ? join(ROOT, "docs", path) : join(ROOT, path);
    const missing = named.filter((path) => path.includes("/") && !existsSync(at(path)));
    expect(missing).toEqual([]);
  });

  test("every bare file name it names is a file of the repository", () => {
    const files = baseNames();
    const missing = named.filter((name) => !name.includes("/") && !files.has(name));
    expect(missing).toEqual([]);
  });

  test("names every script of server/store/lua", () => {
    const scripts = readdirSync(join(ROOT, "server/store/lua")).filter((f) => f.endsWith(".lua"));
    const unnamed = scripts.filter((script) => !named.some((n) => n.endsWith(script)));
    expect(unnamed).toEqual([]);
  });
});
