import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ServiceProcess, spawnService, tempDir } from "../support/harness.js";
import { matchesExample, shellExamples } from "../support/readme-blocks.js";
import { ROOT } from "../support/sdk-consumer.js";

const run = promisify(execFile);
const README = join(ROOT, "README.md");
const README_URL = "http://127.0.0.1:8080";

/** Runs a block with bash, as a reader pastes it; answers what it printed, stdout then stderr. */
async function runBlock(commands: string, cwd: string): Promise<string> {
  const { stdout, stderr } = await run("bash", ["-c", commands], { cwd, encoding: "utf8" }).catch(
    (err: { stdout: string; stderr: string }) => err,
  );
  return stdout + stderr;
}

/**
 * The README's "Try it": every ```sh try block runs, in order, against a service started
 * as `npm start` starts it (its own redis-server and data folder, so `chat-1` is new), from
 * the clone's root as the README says, and prints what the ```text block after it shows.
 */
describe("the README's shell examples", () => {
  let service: ServiceProcess;
  const data = tempDir("readme");
  beforeAll(async () => {
    service = await spawnService(undefined, { DATA_DIR: data.dir });
  }, 60_000);
  afterAll(async () => {
    await service?.kill("SIGTERM");
    data.remove();
  });

  test("there are examples to run, none with --schema", () => {
    const examples = shellExamples(README);
    expect(examples.length).toBeGreaterThanOrEqual(4);
    for (const { commands } of examples) expect(commands).not.toContain("--schema");
  });

  test("each prints what the README says it prints", async () => {
    for (const { commands, expected, line } of shellExamples(README)) {
      const output = await runBlock(commands.replaceAll(README_URL, service.url), ROOT);
      expect(matchesExample(output, expected), `README.md:${line} printed:\n${output}`).toBe(true);
    }
  }, 120_000);

  test("buf curl needs no schema outside the clone either (reflection)", async () => {
    const elsewhere = tempDir("readme-elsewhere");
    try {
      const [put] = shellExamples(README);
      const buf = join(ROOT, "node_modules/.bin/buf");
      const commands = (put?.commands ?? "").replace("npx buf", buf);
      const output = await runBlock(commands.replaceAll(README_URL, service.url), elsewhere.dir);
      expect(matchesExample(output, put?.expected ?? ""), output).toBe(true);
    } finally {
      elsewhere.remove();
    }
  }, 60_000);
});

describe("matchesExample", () => {
  test("… matches within a line, and a line of … any number of lines", () => {
    expect(
      matchesExample('{\n  "id": "x1",\n  "a": 1,\n  "b": 2\n}\n', '{\n  "id": "…",\n  …\n}'),
    ).toBe(true);
    expect(matchesExample('{\n  "id": "x1"\n}', '{\n  "id": "…",\n  …\n}')).toBe(false);
    expect(matchesExample("{\n}\n", "{\n  …\n}")).toBe(true);
    expect(matchesExample("a\nb\n", "a\nc")).toBe(false);
  });
});
