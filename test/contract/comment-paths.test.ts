import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { basename, dirname, join, normalize } from "node:path";
import { describe, expect, test } from "vitest";
import { ROOT } from "../support/sdk-consumer.js";

/*
 * The repository explains itself: a comment that names a file names one of the
 * repository (a script, a module, a test, a page of docs/), so a reader can open it.
 * A file that was renamed or never existed, or a document kept elsewhere, is caught here.
 */

/** A path-looking word: optional folders, a name, a known extension. */
const FILE =
  /(?<![\w@/.:=-])((?:\.{0,2}\/)?(?:[\w.-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|lua|md|json|cjs|mjs|proto|py|go|sh|yaml|txt))\b/g;

/** Where a comment's relative path may start from, besides its own folder and the root. */
const BASES = ["server", "server/store", "server/store/lua", "sdk/src", "inspector/src", "test"];

/** Named on purpose though not committed: what the bench writes, a library's own module. */
const ELSEWHERE = [/^bench\/results\//, /^latest\.(md|json)$/, /^protocol\/serialization\.ts$/];

const CODE = /\.(ts|mjs|cjs|lua|py|go|sh)$/;
const COMMENT = /^\s*(\/\/|\/\*|\*|--|#)/;

function committed(): string[] {
  return execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
}

describe("paths named in comments", () => {
  test("name files or folders of the repository", () => {
    const files = committed();
    const known = new Set(files);
    for (const file of files) {
      for (let dir = dirname(file); dir !== "."; dir = dirname(dir)) known.add(dir);
    }
    const names = new Set(files.map((file) => basename(file)));
    const scanned = files.filter((file) => CODE.test(file) && !file.startsWith("gen/"));
    expect(scanned.length).toBeGreaterThan(100);

    const missing: string[] = [];
    for (const file of scanned) {
      const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
      for (const [i, line] of lines.entries()) {
        if (!COMMENT.test(line)) continue;
        for (const [, path = ""] of line.matchAll(FILE)) {
          if (ELSEWHERE.some((pattern) => pattern.test(path))) continue;
          const tried = [dirname(file), ".", ...BASES].map((base) => normalize(join(base, path)));
          const found =
            tried.some((candidate) => known.has(candidate)) ||
            (!path.includes("/") && names.has(path)) ||
            files.some((f) => f.endsWith(`/${path.replace(/^\.?\.?\//, "")}`));
          if (!found) missing.push(`${file}:${i + 1} ${path}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
