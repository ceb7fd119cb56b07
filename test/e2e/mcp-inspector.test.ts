import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  grpcClients,
  putSession,
  type ServiceProcess,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { useOwnRedis } from "../support/server-fixture.js";
import { REFUSAL_TEXT, successText } from "../support/suggest.js";

// The MCP Inspector's CLI, a client nobody here wrote, against a service process of its
// own: it lists the three tools and calls each with the chat in `_meta`. The
// Inspector needs Node 22.7.5 or later; on an older Node the file says so and is skipped
// (CI runs it in the Node 24 pass).

const major = Number(process.versions.node.split(".")[0]);
const skipReason =
  major >= 22 ? undefined : `the MCP Inspector needs Node >= 22.7.5 (this is ${process.version})`;
const INSPECTOR = "node_modules/@modelcontextprotocol/inspector/cli/build/cli.js";
const run = promisify(execFile);

const own = useOwnRedis();
let service: ServiceProcess | undefined;
beforeAll(async () => {
  if (skipReason === undefined) service = await spawnService(own.url);
});
afterAll(async () => {
  await service?.kill("SIGTERM");
});

/** Runs the Inspector's CLI against the service's /mcp; answers its JSON output. */
async function inspector(...args: string[]): Promise<Record<string, unknown>> {
  const url = `${service?.url}/mcp`;
  const { stdout } = await run(
    process.execPath,
    [INSPECTOR, "--cli", url, "--transport", "http", ...args],
    {
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe.skipIf(skipReason !== undefined)(
  `the MCP Inspector CLI${skipReason ? ` (${skipReason})` : ""}`,
  () => {
    test("lists the three tools", async () => {
      const { tools } = (await inspector("--method", "tools/list")) as {
        tools: { name: string }[];
      };
      expect(tools.map((tool) => tool.name)).toEqual([
        "suggest_task",
        "withdraw_suggestion",
        "list_suggestions",
      ]);
    });

    test("calls suggest_task with the chat in _meta; a helper's call is refused", async () => {
      const sessionId = uniqueId("inspector");
      await putSession(grpcClients(service?.url ?? ""), { sessionId });
      const call = (...more: string[]) =>
        inspector(
          ...["--method", "tools/call", "--tool-name", "suggest_task"],
          ...[
            "--tool-arg",
            "title=Retry failed uploads",
            "tldr=Uploads fail",
            "brief=Add retries.",
          ],
          ...["--tool-metadata", `oda.suggest/session_id=${sessionId}`, ...more],
        );
      expect(await call("oda.suggest/turn_id=turn-1")).toMatchObject({
        content: [{ type: "text", text: successText("Retry failed uploads") }],
        structuredContent: { suggestion_id: expect.any(String) },
      });
      expect(await call("oda.suggest/turn_id=turn-2", "oda.suggest/role=helper")).toMatchObject({
        content: [{ type: "text", text: REFUSAL_TEXT.helper }],
        isError: true,
      });
      const { open } = await grpcClients(service?.url ?? "").suggestions.listSuggestions({
        sessionId,
      });
      expect(open.map((s) => s.turnId)).toEqual(["turn-1"]);
    });

    test("calls list_suggestions and withdraw_suggestion on the chat in _meta", async () => {
      const sessionId = uniqueId("inspector");
      await putSession(grpcClients(service?.url ?? ""), { sessionId });
      const meta = ["--tool-metadata", `oda.suggest/session_id=${sessionId}`];
      const offered = (await inspector(
        ...["--method", "tools/call", "--tool-name", "suggest_task"],
        ...["--tool-arg", "title=Retry failed uploads", "tldr=Uploads fail", "brief=Add retries."],
        ...meta,
      )) as { structuredContent: { suggestion_id: string } };
      const id = offered.structuredContent.suggestion_id;
      const list = () =>
        inspector(...["--method", "tools/call", "--tool-name", "list_suggestions"], ...meta);
      expect(await list()).toMatchObject({
        structuredContent: {
          suggestions: [{ suggestion_id: id, title: "Retry failed uploads", state: "open" }],
        },
      });
      expect(
        await inspector(
          ...["--method", "tools/call", "--tool-name", "withdraw_suggestion"],
          ...["--tool-arg", `suggestion_id=${id}`, "reason=Done here"],
          ...meta,
        ),
      ).toMatchObject({
        content: [
          {
            type: "text",
            text: 'Withdrew "Retry failed uploads". It stays dismissed unless the user restores it.',
          },
        ],
        structuredContent: { suggestion_id: id },
      });
      expect(await list()).toMatchObject({
        structuredContent: { suggestions: [{ suggestion_id: id, state: "dismissed" }] },
      });
    });
  },
);
