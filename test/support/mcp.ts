import { Writable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { pino } from "pino";
import type { SuggestServer } from "../../server/server.js";

/** The `_meta` of a tools/call naming the chat, and the turn, role and call id when given. */
export function toolMeta(
  sessionId: string,
  more: { turnId?: string; role?: string; toolCallId?: string } = {},
): Record<string, string> {
  return {
    "oda.suggest/session_id": sessionId,
    ...(more.turnId === undefined ? {} : { "oda.suggest/turn_id": more.turnId }),
    ...(more.role === undefined ? {} : { "oda.suggest/role": more.role }),
    ...(more.toolCallId === undefined ? {} : { "oda.suggest/tool_call_id": more.toolCallId }),
  };
}

/** A connected client of the official MCP SDK (v1 line) on `${baseUrl}/mcp`. */
export async function mcpClient(
  baseUrl: string,
  headers: Record<string, string> = {},
): Promise<Client> {
  const client = new Client({ name: "suggest-task-tests", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

/** The answer of a raw POST to /mcp: status, headers and the JSON body (or its text). */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown> | undefined;
  readonly text: string;
}

/** POSTs `body` (an object, sent as JSON, or raw text) to `${baseUrl}/mcp` as an MCP client would. */
export async function mcpPost(
  baseUrl: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const res = await fetch(`${baseUrl}/mcp`, {
    method: "POST",
    headers: {
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
      "mcp-protocol-version": "2025-06-18",
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body: json, text };
}

/** A tools/call request body with `_meta`. */
export function toolsCall(
  name: string,
  args: unknown,
  meta: Record<string, unknown> = {},
  id: number | string = 1,
): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: args, _meta: meta },
  };
}

/** The call log of a server, as the lines its pino logger wrote (pass `logger` to its settings). */
export function callLog(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "info" }, sink), lines };
}

/** `suggest_calls_total` of `method` and `code` on `server`. */
export async function callsCounted(
  server: SuggestServer,
  method: string,
  code: string,
): Promise<number> {
  const metric = await server.telemetry.registry.getSingleMetric("suggest_calls_total")?.get();
  const value = metric?.values.find((v) => v.labels.method === method && v.labels.code === code);
  return value?.value ?? 0;
}
