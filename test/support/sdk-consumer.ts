import { execFile } from "node:child_process";
import { cpSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { tempDir } from "./harness.js";

const run = promisify(execFile);

/** The repository's root. */
export const ROOT = resolve(import.meta.dirname, "../..");

/** The folder of the TypeScript snippets the README and docs/ show (a consumer project). */
export const SNIPPETS_DIR = join(ROOT, "examples/typescript");

/** The version of a package the repository installed, so a consumer gets the same one. */
export function installedVersion(name: string): string {
  return JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")).version;
}

/** A consumer project in a temporary folder, with the packed SDK installed. */
export interface ConsumerProject {
  readonly dir: string;
  /** The SDK tarball's `npm pack --json` entry (its file name and files). */
  readonly packed: { filename: string; files: { path: string }[] };
  remove(): void;
}

/** What a consumer project starts from, before the SDK is installed into it. */
export interface ConsumerSetup {
  /** Files to copy in (names in `from`), `package.json` among them unless given below. */
  readonly from?: string;
  readonly files?: readonly string[];
  /** A `package.json` to write instead. */
  readonly packageJson?: Record<string, unknown>;
  /** Packages to install beside the SDK and its usual peers, at the repository's versions. */
  readonly extra?: readonly string[];
}

/**
 * Packs `sdk/` (building it) and installs the tarball into a fresh project, with the
 * packages a user adds beside it (the connect-es peers, @types/node, and `extra`), each at
 * the version the repository has, as the README's consumer setup says. Nothing is fetched
 * that `npm ci` did not already put in npm's cache (`--prefer-offline`); no install
 * script runs.
 */
export async function consumerProject(setup: ConsumerSetup): Promise<ConsumerProject> {
  const project = tempDir("sdk-consumer");
  for (const file of setup.files ?? []) {
    cpSync(join(setup.from ?? ROOT, file), join(project.dir, file));
  }
  if (setup.packageJson !== undefined) {
    writeFileSync(join(project.dir, "package.json"), JSON.stringify(setup.packageJson));
  }
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", project.dir], {
    cwd: join(ROOT, "sdk"),
  });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf("[")));
  const peers = ["@types/node", "@connectrpc/connect", "@connectrpc/connect-node"];
  await run(
    "npm",
    [
      "install",
      join(project.dir, packed.filename),
      ...[...peers, ...(setup.extra ?? [])].map((name) => `${name}@${installedVersion(name)}`),
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
    ],
    { cwd: project.dir },
  );
  return { dir: project.dir, packed, remove: project.remove };
}

/**
 * The snippet files (`*.ts`, and `agents/*.ts`: the framework adapters' examples, checked
 * under a tsconfig of their own) and the project files of examples/typescript.
 */
export function snippetFiles(): { snippets: string[]; project: string[] } {
  const names = readdirSync(SNIPPETS_DIR);
  const agents = readdirSync(join(SNIPPETS_DIR, "agents")).map((n) => `agents/${n}`);
  return {
    snippets: [...names, ...agents].filter((n) => n.endsWith(".ts")).sort(),
    project: [...names, ...agents].filter((n) => n.endsWith(".json")),
  };
}
