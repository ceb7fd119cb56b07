#!/usr/bin/env node
/// <reference types="node" />
/**
 * `suggest-task-mcp`: the service's MCP tools (`suggest_task`, `withdraw_suggestion`,
 * `list_suggestions`) on stdio, for a local agent host (Claude Code, an IDE) that starts
 * MCP servers as processes. A relay to the service's `POST /mcp` (`createMcpRelay`).
 *
 * - `SUGGEST_TASK_URL` (required): the service's base URL, e.g. `http://127.0.0.1:8080`.
 * - `SUGGEST_TASK_TOKEN`: a bearer credential of role `agent`.
 * - `SUGGEST_TASK_SESSION_ID`, else `CLAUDE_CODE_SESSION_ID`: the chat the host runs in,
 *   given to calls whose `_meta` names none.
 *
 * The official MCP packages are optional peers of `@oda/suggest-task`, which most users
 * (browsers, services) never need; started without them, the bin says what to install.
 *
 * @packageDocumentation
 */

import { createMcpRelay, type McpModules, type McpRelaySettings } from "./relay.js";

const NAME = "suggest-task-mcp";

/** What a user installs beside the package for the bin. */
const NEEDED = "@modelcontextprotocol/server@2 @modelcontextprotocol/client@2";

function fail(message: string): never {
  process.stderr.write(`${NAME}: ${message}\n`);
  process.exit(1);
}

/** The settings from the environment, or the reason the bin cannot start. */
function settingsFrom(env: NodeJS.ProcessEnv): McpRelaySettings {
  const url = env.SUGGEST_TASK_URL?.trim();
  if (!url) {
    fail("SUGGEST_TASK_URL is not set: the service's base URL, e.g. http://127.0.0.1:8080");
  }
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    fail(`SUGGEST_TASK_URL "${url}" is not an http:// or https:// URL`);
  }
  return {
    url,
    token: env.SUGGEST_TASK_TOKEN?.trim() || undefined,
    sessionId:
      env.SUGGEST_TASK_SESSION_ID?.trim() || env.CLAUDE_CODE_SESSION_ID?.trim() || undefined,
  };
}

function isMissingModule(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
}

/** The official MCP packages, or the message naming them when they are not installed. */
async function loadMcp(): Promise<McpModules & { serveStdio: ServeStdio }> {
  try {
    const [server, stdio, client] = await Promise.all([
      import("@modelcontextprotocol/server"),
      import("@modelcontextprotocol/server/stdio"),
      import("@modelcontextprotocol/client"),
    ]);
    return {
      Server: server.Server,
      Client: client.Client,
      StreamableHTTPClientTransport: client.StreamableHTTPClientTransport,
      serveStdio: stdio.serveStdio,
    };
  } catch (err) {
    if (!isMissingModule(err)) throw err;
    return fail(
      `needs the official MCP packages (optional peers of @oda/suggest-task): npm install ${NEEDED}` +
        ` (or run it with npx -p @oda/suggest-task -p ${NEEDED.split(" ").join(" -p ")} ${NAME})`,
    );
  }
}

type ServeStdio = typeof import("@modelcontextprotocol/server/stdio").serveStdio;

async function main(): Promise<void> {
  const settings = settingsFrom(process.env);
  const mcp = await loadMcp();
  const served = mcp.serveStdio(() => createMcpRelay(mcp, settings), {
    onerror: (err) => process.stderr.write(`${NAME}: ${err.message}\n`),
  });
  // The host stops the relay by closing its stdin; the service's keep-alive connections
  // would hold the process for seconds more, so it exits once the relay is closed.
  process.stdin.once("end", () => {
    void served.close().finally(() => process.exit(0));
  });
}

main().catch((err: unknown) =>
  fail(err instanceof Error ? (err.stack ?? err.message) : String(err)),
);
