import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mcpTool } from "../../sdk/src/tool.js";
import { withdrawSuggestionTool } from "../../sdk/src/withdraw-tool.js";
import { uniqueId } from "../support/harness.js";
import { mcpClient, toolMeta } from "../support/mcp.js";
import { ROOT } from "../support/sdk-consumer.js";
import { useTestServer } from "../support/server-fixture.js";
import { REFUSAL_TEXT, successText } from "../support/suggest.js";
import { clientsWith } from "../support/tenant-auth.js";
import { WITHDRAW_TEXT } from "../support/withdraw.js";

// The SDK's bin `suggest-task-mcp` as a local agent host runs it: spawned by the official
// MCP client (the SDK's v1 line, as Claude Code and most hosts use it) over stdio, relaying
// to the service's POST /mcp with the agent's bearer token, the chat from the environment.

const ADMIN = "admin-token-0123456789";
const AGENT = "agent-token-0123456789";
const APP = "app-token-0123456789";
const t = useTestServer({
  settings: {
    authTokens: [
      { role: "host-admin", token: ADMIN },
      { role: "agent", token: AGENT },
      { role: "app", token: APP },
    ],
  },
});

const BIN = join(ROOT, "sdk/src/mcp/suggest-task-mcp.ts");
const ARGS = { title: "Retry failed uploads", tldr: "Uploads fail", brief: "Add retries." };

/** The bin started by the official MCP client with `env` (and the service's URL and token). */
async function spawnBin(env: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "suggest-task-tests", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", BIN],
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", SUGGEST_TASK_URL: t.url, ...env },
    stderr: "pipe",
  });
  await client.connect(transport);
  return client;
}

async function chat(): Promise<string> {
  const sessionId = uniqueId("stdio");
  await clientsWith(t.url, ADMIN).local.putSession({
    session: { sessionId, workspaceId: "ws-1", folder: 1 },
  });
  return sessionId;
}

async function recorded(sessionId: string): Promise<string[]> {
  const { open, settled } = await clientsWith(t.url, APP).suggestions.listSuggestions({
    sessionId,
  });
  return [...open, ...settled].map((s) => s.title);
}

/** A tool call's text, error mark and structured content. */
async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
) {
  const result = await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) });
  const content = result.content as { type: string; text: string }[];
  return {
    text: content[0]?.text,
    isError: result.isError === true,
    structured: result.structuredContent as Record<string, unknown> | undefined,
  };
}

describe("suggest-task-mcp, the session from SUGGEST_TASK_SESSION_ID", () => {
  let sessionId: string;
  let client: Client;
  beforeAll(async () => {
    sessionId = await chat();
    client = await spawnBin({
      SUGGEST_TASK_TOKEN: AGENT,
      SUGGEST_TASK_SESSION_ID: sessionId,
      CLAUDE_CODE_SESSION_ID: "not-this-one",
    });
  });
  afterAll(() => client?.close());

  test("lists the service's three tools, exactly as POST /mcp lists them", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      "suggest_task",
      "withdraw_suggestion",
      "list_suggestions",
    ]);
    const [suggest, withdraw] = tools;
    expect({ ...suggest, outputSchema: undefined }).toMatchObject(mcpTool());
    // The MCP tool withdraws by the id suggest_task gave, not by the title as the SDK's tool does.
    expect(withdraw).toMatchObject({
      name: "withdraw_suggestion",
      description: mcpTool(withdrawSuggestionTool).description,
      inputSchema: { required: ["suggestion_id"] },
    });
    const direct = await mcpClient(t.url, { authorization: `Bearer ${AGENT}` });
    try {
      expect(tools).toEqual((await direct.listTools()).tools);
    } finally {
      await direct.close();
    }
  });

  test("suggest_task, withdraw_suggestion and list_suggestions act on the chat from the environment", async () => {
    const offered = await call(client, "suggest_task", ARGS);
    expect(offered).toMatchObject({ text: successText(ARGS.title), isError: false });
    const id = offered.structured?.suggestion_id;
    expect(typeof id).toBe("string");
    expect(await recorded(sessionId)).toEqual([ARGS.title]);

    expect(await call(client, "list_suggestions", {})).toMatchObject({
      isError: false,
      structured: { suggestions: [{ suggestion_id: id, title: ARGS.title, state: "open" }] },
    });
    const withdrawn = await call(client, "withdraw_suggestion", {
      suggestion_id: id,
      reason: "Done here",
    });
    expect(withdrawn).toEqual({
      text: WITHDRAW_TEXT.success(ARGS.title),
      isError: false,
      structured: { suggestion_id: id },
    });
    expect(await call(client, "list_suggestions", {})).toMatchObject({
      structured: { suggestions: [{ suggestion_id: id, state: "dismissed" }] },
    });
  });

  test("a call that names its own chat in _meta keeps it", async () => {
    const other = await chat();
    const offered = await call(client, "suggest_task", ARGS, toolMeta(other));
    expect(offered).toMatchObject({ text: successText(ARGS.title), isError: false });
    expect(await recorded(other)).toEqual([ARGS.title]);
  });

  test("one offer per turn, when the host gives the turn", async () => {
    const other = await chat();
    const meta = toolMeta(other, { turnId: "turn-1" });
    expect(await call(client, "suggest_task", ARGS, meta)).toMatchObject({ isError: false });
    expect(await call(client, "suggest_task", { ...ARGS, title: "Another" }, meta)).toEqual({
      text: REFUSAL_TEXT.turn,
      isError: true,
      structured: undefined,
    });
    expect(await recorded(other)).toEqual([ARGS.title]);
  });
});

describe("suggest-task-mcp, the session from CLAUDE_CODE_SESSION_ID", () => {
  test("records the offer in Claude Code's session", async () => {
    const sessionId = await chat();
    const client = await spawnBin({ SUGGEST_TASK_TOKEN: AGENT, CLAUDE_CODE_SESSION_ID: sessionId });
    try {
      expect(await call(client, "suggest_task", ARGS)).toMatchObject({
        text: successText(ARGS.title),
        isError: false,
      });
      expect(await recorded(sessionId)).toEqual([ARGS.title]);
    } finally {
      await client.close();
    }
  });
});

describe("suggest-task-mcp, no session in the environment", () => {
  let client: Client;
  beforeAll(async () => {
    client = await spawnBin({ SUGGEST_TASK_TOKEN: AGENT });
  });
  afterAll(() => client?.close());

  test("a host's own conversation id in _meta names the chat", async () => {
    const sessionId = await chat();
    expect(await call(client, "suggest_task", ARGS, { threadId: sessionId })).toMatchObject({
      text: successText(ARGS.title),
      isError: false,
    });
    expect(await recorded(sessionId)).toEqual([ARGS.title]);
  });

  test("no chat anywhere is the reference's refusal", async () => {
    expect(await call(client, "suggest_task", ARGS)).toEqual({
      text: REFUSAL_TEXT.noSession,
      isError: true,
      structured: undefined,
    });
  });
});

describe("suggest-task-mcp, the credentials", () => {
  test("without SUGGEST_TASK_TOKEN the service's 401 reaches the host as an error", async () => {
    const client = await spawnBin({ SUGGEST_TASK_SESSION_ID: "any" });
    try {
      await expect(client.listTools()).rejects.toThrow("a valid bearer token is required");
    } finally {
      await client.close();
    }
  });
});
