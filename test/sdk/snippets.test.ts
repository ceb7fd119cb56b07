import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { putSession, uniqueId } from "../support/harness.js";
import {
  type ConsumerProject,
  consumerProject,
  SNIPPETS_DIR,
  snippetFiles,
} from "../support/sdk-consumer.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const run = promisify(execFile);

/**
 * The TypeScript snippets of the README and docs/ (examples/typescript) in a consumer
 * project set up as the README says (`"type": "module"`, the packed SDK and the connect-es
 * packages installed): type-checked under both module resolutions a consumer uses, and run
 * against a real server where they need nothing else (model-turn.ts needs a model API key;
 * chat-host.ts is a server of its own).
 */
describe("the SDK snippets of the docs", () => {
  const t = useTestServer();
  let project: ConsumerProject;
  beforeAll(async () => {
    const { snippets, project: files } = snippetFiles();
    project = await consumerProject(SNIPPETS_DIR, [...snippets, ...files]);
  }, 240_000);
  afterAll(() => project?.remove());

  const tsc = (config: string) =>
    run(join(project.dir, "node_modules/.bin/tsc"), ["-p", config], { cwd: project.dir });
  const node = (file: string) =>
    run(process.execPath, [join("out", file)], {
      cwd: project.dir,
      env: { ...process.env, SUGGEST_URL: t.url },
    });

  test("type-check under bundler resolution", async () => {
    await expect(tsc("tsconfig.bundler.json")).resolves.toMatchObject({ stdout: "" });
  }, 120_000);

  test("type-check under nodenext resolution (and compile for the runs below)", async () => {
    await expect(tsc("tsconfig.nodenext.json")).resolves.toMatchObject({ stdout: "" });
  }, 120_000);

  test("every-rpc.ts runs every RPC of the flow and prints what its comments say", async () => {
    const { stdout } = await node("every-rpc.js");
    expect(stdout.split("\n")).toEqual([
      'Suggested "Add retries". The user decides whether to start it; do not start it yourself.',
      "1 open, 0 settled",
      "true",
      "true",
      "",
    ]);
  });

  test("errors.ts answers each failure by its typed error and its enums' names", async () => {
    const { stdout } = await node("errors.js");
    expect(stdout.split("\n")).toEqual([
      expect.stringMatching(/^chat chat-[0-9a-f-]+ is in no workspace$/),
      "not found: no-such-id",
      "refused: suggest_task: one suggestion per turn; this turn already offered one",
      "",
    ]);
  });

  test("watch.ts prints every change and ends quietly (exit 0) on its own Ctrl-C", async () => {
    const sessionId = uniqueId("watch");
    await putSession(t.clients, { sessionId });
    const child = spawn(process.execPath, [join("out", "watch.js"), sessionId], {
      cwd: project.dir,
      env: { ...process.env, SUGGEST_URL: t.url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const seen = (line: string) =>
      new Promise<void>((resolve) => {
        const check = () => stdout.includes(`${line}\n`) && resolve();
        child.stdout.on("data", check);
        check();
      });
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    await seen("0 open, 0 settled");
    await offerOne(t.clients, sessionId);
    await seen("1 open, 0 settled");
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    expect({ stdout, stderr }).toEqual({
      stdout: "0 open, 0 settled\n1 open, 0 settled\nstopped watching\n",
      stderr: "",
    });
  });
});
