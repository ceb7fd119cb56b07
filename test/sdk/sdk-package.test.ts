import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { uniqueId } from "../support/harness.js";
import { type ConsumerProject, consumerProject } from "../support/sdk-consumer.js";
import { useTestServer } from "../support/server-fixture.js";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");
const TSC = join(ROOT, "node_modules/.bin/tsc");

/**
 * A consumer's program: only the package's public entries, strict TypeScript. The same text
 * is written as main.ts (an ES module, the project being `"type": "module"`) and main.cts
 * (CommonJS, whose imports tsc compiles to `require`), so both module formats of the package
 * are type-checked and run by the same calls. No top-level await, which CommonJS lacks.
 */
const CONSUMER = `
import {
  AgentRole,
  anthropicTool,
  callSuggestTaskTool,
  createLocalHostClient,
  createSuggestionClient,
  isSuggestionNotFoundError,
  isSuggestionNotOpenError,
  isSuggestTaskRefusalError,
  SuggestionState,
  suggestTaskTool,
  type Suggestion,
} from "@oda/suggest-task/node";
import { errorCodeText, SuggestionErrorCode } from "@oda/suggest-task";
import * as web from "@oda/suggest-task/web";

async function main(): Promise<Record<string, unknown>> {
  const baseUrl = process.env.BASE_URL ?? "";
  const sessionId = process.env.SESSION_ID ?? "";
  const steps: Record<string, unknown> = {};

  const client = createSuggestionClient({ baseUrl, protocol: "grpc", token: process.env.SDK_TOKEN });
  await createLocalHostClient({ baseUrl }).putSession({ session: { sessionId, workspaceId: "ws-pack" } });
  steps.tool = { name: anthropicTool().name, maxLength: suggestTaskTool.inputSchema.properties.title?.maxLength };

  const offered = await callSuggestTaskTool(
    client,
    JSON.stringify({ title: "Ship the SDK", tldr: "Callers need it", brief: "Publish @oda/suggest-task." }),
    { sessionId, turnId: "turn-1", role: AgentRole.TOP_LEVEL, toolCallId: "call-1" },
  );
  steps.offered = offered.content;

  try {
    await client.suggestTask({
      context: { sessionId, turnId: "turn-1", role: AgentRole.TOP_LEVEL },
      args: { title: "Another", tldr: "Same turn", brief: "Refused." },
    });
  } catch (err) {
    if (isSuggestTaskRefusalError(err)) steps.refused = { text: err.rawMessage, limit: err.payload.limit };
  }

  // The web entry's fetch transport, from the same package.
  const listed = await web.createSuggestionClient({ baseUrl }).listSuggestions({ sessionId });
  const open: Suggestion[] = listed.open;
  steps.listed = open.map((s) => s.title);
  const id = open[0]?.id ?? "";

  const started = await client.startSuggestion({ sessionId, suggestionId: id });
  steps.started = { chat: started.chatId !== "", state: started.suggestion?.state === SuggestionState.STARTED };

  try {
    await client.draftSuggestion({ sessionId, suggestionId: id });
  } catch (err) {
    if (isSuggestionNotOpenError(err)) {
      steps.notOpen = [SuggestionState[err.payload.state], err.errorCode === errorCodeText(SuggestionErrorCode.NOT_OPEN)];
    }
  }
  try {
    await client.getSuggestion({ sessionId, suggestionId: "no-such-id" });
  } catch (err) {
    if (isSuggestionNotFoundError(err)) steps.notFound = err.payload.suggestionId;
  }
  return steps;
}

main().then(
  (steps) => console.log(JSON.stringify(steps)),
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
`;

/**
 * Strict, and with the libraries' own declarations checked too (`skipLibCheck: false`), so an
 * error in the SDK's `.d.ts` would show. `DOM` is there because @connectrpc/connect's
 * declarations name the fetch API's `HeadersInit`, which @types/node 20 does not declare.
 */
const STRICT = {
  strict: true,
  target: "ES2022",
  lib: ["ES2023", "DOM"],
  types: ["node"],
  skipLibCheck: false,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
};

describe("the packed SDK in a fresh project", () => {
  const t = useTestServer();
  let project: ConsumerProject;
  let packed: { filename: string; files: { path: string }[] };
  beforeAll(async () => {
    // The optional peers of the entries it imports (/node and /web), as a user adds them.
    project = await consumerProject({
      packageJson: { name: "consumer", private: true, type: "module" },
      extra: ["@connectrpc/connect-web"],
    });
    packed = project.packed;
    writeFileSync(join(project.dir, "main.ts"), CONSUMER);
    writeFileSync(join(project.dir, "main.cts"), CONSUMER);
    writeFileSync(
      join(project.dir, "tsconfig.nodenext.json"),
      JSON.stringify({
        compilerOptions: {
          ...STRICT,
          module: "nodenext",
          moduleResolution: "nodenext",
          outDir: "out",
        },
        files: ["main.ts", "main.cts"],
      }),
    );
    writeFileSync(
      join(project.dir, "tsconfig.bundler.json"),
      JSON.stringify({
        compilerOptions: { ...STRICT, module: "esnext", moduleResolution: "bundler", noEmit: true },
        files: ["main.ts"],
      }),
    );
  }, 240_000);
  afterAll(async () => {
    project?.remove();
  });

  test("the tarball holds both module formats of the SDK and the generated code, nothing else", () => {
    const paths = packed.files.map((f) => f.path).sort();
    for (const format of ["esm", "cjs"]) {
      for (const entry of ["index", "node", "web", "ai-sdk", "openai-agents", "langchain"]) {
        expect(paths).toContain(`dist/${format}/sdk/src/${entry}.js`);
        expect(paths).toContain(`dist/${format}/sdk/src/${entry}.d.ts`);
      }
      expect(paths).toContain(`dist/${format}/gen/oda/suggest/v1/suggestion_service_pb.js`);
      expect(paths).toContain(`dist/${format}/gen/google/rpc/error_details_pb.d.ts`);
    }
    expect(paths).toContain("dist/cjs/package.json");
    expect(paths).toContain("dist/esm/sdk/src/mcp/suggest-task-mcp.js");
    expect(
      paths.filter(
        (p) =>
          !/^dist\/(esm|cjs)\/.*\.(js|d\.ts)$|^dist\/cjs\/package\.json$|^(package\.json|README\.md|LICENSE|CHANGELOG\.md)$/.test(
            p,
          ),
      ),
    ).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(ROOT, "sdk/package.json"), "utf8"));
    expect(manifest).toMatchObject({
      name: "@oda/suggest-task",
      version: "1.0.0",
      license: "Apache-2.0",
      type: "module",
      sideEffects: false,
      exports: {
        ".": {
          import: {
            types: "./dist/esm/sdk/src/index.d.ts",
            default: "./dist/esm/sdk/src/index.js",
          },
          require: {
            types: "./dist/cjs/sdk/src/index.d.ts",
            default: "./dist/cjs/sdk/src/index.js",
          },
        },
      },
    });
    expect(readFileSync(join(ROOT, "sdk/LICENSE"), "utf8")).toMatch(
      /Apache License\s+Version 2\.0/,
    );
    expect(
      JSON.parse(
        readFileSync(
          join(project.dir, "node_modules/@oda/suggest-task/dist/cjs/package.json"),
          "utf8",
        ),
      ),
    ).toEqual({ type: "commonjs" });
  });

  test.each(["nodenext", "bundler"])(
    "a consumer type-checks under tsc --strict with moduleResolution %s",
    async (resolution) => {
      const result = await run(TSC, ["-p", `tsconfig.${resolution}.json`], {
        cwd: project.dir,
      }).catch((err: { stdout: string }) => err);
      expect(result.stdout).toBe("");
    },
    120_000,
  );

  /** What both consumers print: the steps of main() against the real server. */
  const EXPECTED_STEPS = {
    tool: { name: "suggest_task", maxLength: 60 },
    offered:
      'Suggested "Ship the SDK". The user decides whether to start it; do not start it yourself.',
    refused: {
      text: "suggest_task: one suggestion per turn; this turn already offered one",
      limit: 1,
    },
    listed: ["Ship the SDK"],
    started: { chat: true, state: true },
    notOpen: ["STARTED", true],
    notFound: "no-such-id",
  };

  // The CommonJS run forbids require() of an ES module (as Node 20 before 20.19 does), so it
  // passes only on the package's own CommonJS build.
  test.each([
    ["ES module", "out/main.js", []],
    ["CommonJS", "out/main.cjs", ["--no-experimental-require-module"]],
  ])(
    "the %s consumer offers, lists and starts against a real server, catching typed errors",
    async (_format, file, flags) => {
      // The nodenext check above emits out/; compile here only when it was not run.
      if (!existsSync(join(project.dir, file))) {
        await run(TSC, ["-p", "tsconfig.nodenext.json"], { cwd: project.dir });
      }
      expect(readFileSync(join(project.dir, file), "utf8")).toMatch(
        file.endsWith(".cjs")
          ? /require\("@oda\/suggest-task\/node"\)/
          : /from "@oda\/suggest-task\/node"/,
      );
      const sessionId = uniqueId("sdk-pack");
      const { stdout } = await run(process.execPath, [...flags, file], {
        cwd: project.dir,
        env: { ...process.env, BASE_URL: t.url, SESSION_ID: sessionId },
        timeout: 30_000,
      });
      expect(JSON.parse(stdout)).toEqual(EXPECTED_STEPS);
    },
    120_000,
  );

  test("the bin suggest-task-mcp, installed without its optional MCP peers, says what to install", async () => {
    const bin = join(project.dir, "node_modules/.bin/suggest-task-mcp");
    const failed = await run(bin, [], {
      cwd: project.dir,
      env: { ...process.env, SUGGEST_TASK_URL: t.url },
      timeout: 30_000,
    }).then(
      () => undefined,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toBe(
      "suggest-task-mcp: needs the official MCP packages (optional peers of @oda/suggest-task): " +
        "npm install @modelcontextprotocol/server@2 @modelcontextprotocol/client@2 (or run it with " +
        "npx -p @oda/suggest-task -p @modelcontextprotocol/server@2 -p @modelcontextprotocol/client@2 " +
        "suggest-task-mcp)\n",
    );
  });
});
