import { readFileSync } from "node:fs";

/** A runnable shell block of a Markdown page and the output the page says it prints. */
export interface ShellExample {
  /** The commands, as the page shows them (a ```sh try block). */
  readonly commands: string;
  /** The ```text block right after it. */
  readonly expected: string;
  /** The line of the page the block starts on, for failure messages. */
  readonly line: number;
}

/**
 * The page's runnable examples: each ```sh block marked `try` (its info string is
 * `sh try`) and the ```text block that must follow it. A `try` block without an output
 * block after it throws, so a page cannot promise a command without saying what it prints.
 */
export function shellExamples(path: string): ShellExample[] {
  const text = readFileSync(path, "utf8");
  const examples: ShellExample[] = [];
  const block = /^```sh try\n([\s\S]*?)^```\n(?:\n*)(```text\n([\s\S]*?)^```\n)?/gm;
  for (const match of text.matchAll(block)) {
    const line = text.slice(0, match.index).split("\n").length;
    if (match[3] === undefined)
      throw new Error(`${path}:${line}: a sh try block has no text block`);
    examples.push({ commands: match[1] as string, expected: match[3], line });
  }
  return examples;
}

/**
 * Whether `output` is what `expected` shows, where `…` stands for what differs from run
 * to run: inside a line it matches any text of that line, and a line of only `…` (and
 * indentation) any number of whole lines, none included. Trailing white space aside,
 * everything else must be equal.
 */
export function matchesExample(output: string, expected: string): boolean {
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const lines = expected.trimEnd().split("\n");
  const pattern = lines
    .map((l) => (l.trim() === "…" ? "(?:.*\\n)*?" : `${literal(l).replaceAll("…", ".*")}\\n`))
    .join("");
  return new RegExp(`^${pattern}$`).test(`${output.trimEnd()}\n`);
}

/** Every fenced block of a Markdown text whose info string is `lang`, in order. */
export function fencedBlocks(markdown: string, lang: string): string[] {
  const fence = new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, "gm");
  return [...markdown.matchAll(fence)].map((m) => m[1] as string);
}
