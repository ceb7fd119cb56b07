import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { fencedBlocks } from "../support/readme-blocks.js";
import { ROOT, SNIPPETS_DIR, snippetFiles } from "../support/sdk-consumer.js";

const README = join(ROOT, "README.md");
const DOCS = join(ROOT, "docs");
const pages = [
  README,
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(DOCS, f)),
];
const read = (path: string) => readFileSync(path, "utf8");
const name = (path: string) => path.slice(ROOT.length + 1);

/** The README is a newcomer's path, short and narrow; docs/ holds the rest, each page linked. */
describe("the README and docs/", () => {
  test("the README is under 250 lines, none over 120 characters", () => {
    const lines = read(README).trimEnd().split("\n");
    expect(lines.length).toBeLessThan(250);
    expect(lines.filter((l) => [...l].length > 120)).toEqual([]);
  });

  test("every page of docs/ is linked from the README", () => {
    const readme = read(README);
    for (const page of pages.slice(1)) expect(readme).toContain(`](${name(page)})`);
  });

  test("every relative link of every page names a file of the repository", () => {
    for (const page of pages) {
      for (const [, target] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target as string) || (target as string).startsWith("#")) continue;
        const path = join(dirname(page), (target as string).replace(/#.*$/, ""));
        expect(existsSync(path), `${name(page)} links ${target}`).toBe(true);
      }
    }
  });

  test("every TypeScript block is (in) a snippet file, verbatim, and every file is shown", () => {
    const files = snippetFiles().snippets.map((f) => read(join(SNIPPETS_DIR, f)));
    const shown: string[] = [];
    for (const page of pages) {
      for (const block of fencedBlocks(read(page), "ts")) {
        shown.push(block);
        expect(
          files.some((file) => file.includes(block)),
          `a \`\`\`ts block of ${name(page)} is in no file of examples/typescript:\n${block}`,
        ).toBe(true);
      }
    }
    // And the other way: each snippet file is shown whole somewhere, so none is dead code.
    for (const [i, file] of files.entries()) {
      expect(shown, snippetFiles().snippets[i]).toContain(file);
    }
  });

  test("no page passes --schema to buf curl: the service answers reflection", () => {
    for (const page of pages) expect(read(page), name(page)).not.toMatch(/buf curl[^\n]*--schema/);
  });
});
