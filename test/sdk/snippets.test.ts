import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createChatHostClient } from "../../sdk/src/node.js";
import { connectErrorOf, putSession, uniqueId } from "../support/harness.js";
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
 * against a real server where they need nothing else (model-turn.ts needs a model API key);
 * chat-host.ts runs as the chat host it is.
 */
describe("the SDK snippets of the docs", () => {
  const t = useTestServer();
  let project: ConsumerProject;
  beforeAll(async () => {
    const { snippets, project: files } = snippetFiles();
    project = await consumerProject({ from: SNIPPETS_DIR, files: [...snippets, ...files] });
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

  // The frameworks' own declarations (ai, @langchain/core, @openai/agents) do not compile
  // under the consumer tsconfigs' skipLibCheck: false with exactOptionalPropertyTypes, so
  // the adapters' examples are checked in a tsconfig of their own that skips them.
  test("type-check the framework adapters' examples (agents/tsconfig.json, nodenext)", async () => {
    await expect(tsc("agents/tsconfig.json")).resolves.toMatchObject({ stdout: "" });
  }, 180_000);

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

  /** Runs a compiled snippet as a process of its own; `seen` waits for a line of its output. */
  function spawnSnippet(file: string, args: string[], env: Record<string, string>) {
    const child = spawn(process.execPath, [join("out", file), ...args], {
      cwd: project.dir,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = { stdout: "", stderr: "" };
    child.stdout.on("data", (chunk: Buffer) => {
      out.stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      out.stderr += chunk.toString();
    });
    const exited = new Promise<number | string>((resolve) =>
      child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)),
    );
    const seen = (line: RegExp) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          const found = out.stdout.split("\n").find((l) => line.test(l));
          if (found !== undefined) resolve(found);
        };
        child.stdout.on("data", check);
        void exited.then(() => reject(new Error(`${file} exited: ${JSON.stringify(out)}`)));
        check();
      });
    return { child, out, exited, seen };
  }

  test("watch.ts prints every change and ends quietly (exit 0) on its own Ctrl-C", async () => {
    const sessionId = uniqueId("watch");
    await putSession(t.clients, { sessionId });
    const watch = spawnSnippet("watch.js", [sessionId], { SUGGEST_URL: t.url });
    await watch.seen(/^0 open, 0 settled$/);
    await offerOne(t.clients, sessionId);
    await watch.seen(/^1 open, 0 settled$/);
    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
    expect(watch.out).toEqual({
      stdout: "0 open, 0 settled\n1 open, 0 settled\nstopped watching\n",
      stderr: "",
    });
  });

  test("chat-host.ts serves ChatHostService: NOT_FOUND for an unknown session, one chat per key", async () => {
    const host = spawnSnippet("chat-host.js", [], { PORT: "0" });
    const line = await host.seen(/^chat host on /);
    const client = createChatHostClient({ baseUrl: line.slice("chat host on ".length) });
    const err = await connectErrorOf(client.getSession({ sessionId: "nobody" }));
    expect([err.code, err.rawMessage]).toEqual([Code.NotFound, 'no session "nobody"']);
    const chat = { idempotencyKey: "k-1", workspaceId: "ws-1", title: "Add retries" };
    const first = await client.createChat(chat);
    expect(await client.createChat(chat)).toEqual(first);
    host.child.kill("SIGTERM");
    expect(await host.exited).toBe("SIGTERM");
  });
});
