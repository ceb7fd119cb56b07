import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { uniqueId } from "../support/harness.js";
import { type ConsumerProject, consumerProject } from "../support/sdk-consumer.js";
import { useTestServer } from "../support/server-fixture.js";

/*
 * The packed SDK with the newest connect-es 2.x, which users on Node 22 and later get
 * (connect-node 2.2 and later need Node 22): its peer ranges admit it, and a call goes
 * through. It runs where the suite runs on Node 22 or 24 (CI runs the suite on each);
 * the newest releases are fetched from the npm registry.
 */

const run = promisify(execFile);
const NODE_MAJOR = Number(process.versions.node.split(".")[0]);

describe.skipIf(NODE_MAJOR < 22)("the SDK with the newest connect-es 2.x", () => {
  const t = useTestServer();
  let project: ConsumerProject | undefined;
  afterAll(() => project?.remove());

  test("installs beside it and calls the service", { timeout: 180_000 }, async () => {
    project = await consumerProject({
      packageJson: { name: "newest-connect", private: true, type: "module" },
    });
    const dir = project.dir;
    const newest = JSON.parse(
      (await run("npm", ["view", "@connectrpc/connect@2", "version", "--json"], { cwd: dir }))
        .stdout,
    ) as string[] | string;
    const version = Array.isArray(newest) ? (newest.at(-1) as string) : newest;
    await run(
      "npm",
      [
        "install",
        `@connectrpc/connect@${version}`,
        `@connectrpc/connect-node@${version}`,
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
      ],
      { cwd: dir },
    );
    const installed = (name: string) =>
      JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")).version;
    expect(installed("@connectrpc/connect")).toBe(version);
    expect(installed("@connectrpc/connect-node")).toBe(version);
    // `npm ls` fails, naming it "invalid", when a version is outside the SDK's peer ranges.
    const listed = await run("npm", ["ls", "--all", "@connectrpc/connect"], { cwd: dir }).then(
      ({ stdout }) => stdout,
      (err: { stdout: string }) => `failed: ${err.stdout}`,
    );
    expect(listed).not.toMatch(/invalid|failed/);
    writeFileSync(
      join(dir, "call.mjs"),
      [
        'import { createLocalHostClient, createSuggestionClient } from "@oda/suggest-task/node";',
        "const [baseUrl, sessionId] = process.argv.slice(2);",
        "await createLocalHostClient({ baseUrl }).putSession({ session: { sessionId, workspaceId: 'ws-1' } });",
        "const client = createSuggestionClient({ baseUrl });",
        "const { open, settled } = await client.listSuggestions({ sessionId });",
        "console.log(JSON.stringify({ open: open.length, settled: settled.length }));",
      ].join("\n"),
    );
    const sessionId = uniqueId("newest");
    const { stdout } = await run(process.execPath, ["call.mjs", t.url, sessionId], { cwd: dir });
    expect(JSON.parse(stdout)).toEqual({ open: 0, settled: 0 });
  });
});
