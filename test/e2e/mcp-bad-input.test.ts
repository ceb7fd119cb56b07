import { connect } from "node:http2";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { putSession, uniqueId } from "../support/harness.js";
import {
  callLog,
  callsCounted,
  mcpPost,
  type RawAnswer,
  toolMeta,
  toolsCall,
} from "../support/mcp.js";
import { useTestServer } from "../support/server-fixture.js";
import { keysOf, offeredRecords } from "../support/suggest.js";

// Bad input to /mcp, as the MCP specification answers it: JSON-RPC errors before any
// tool runs, tool errors the model can read where the negotiated version says so. Each
// is in the call log and in suggest_calls_total, and writes nothing to Redis.

const log = callLog();
const t = useTestServer({ settings: { logger: log.logger } });

const ARGS = { title: "A title", tldr: "A tldr", brief: "A brief" };
let sessionId = "";
beforeEach(() => {
  sessionId = uniqueId("mcp-bad");
});
afterEach(async () => {
  expect(await keysOf(t.redis, sessionId)).toEqual([]);
});

/** The call log's lines of `method` and `code`, and their count in `suggest_calls_total`. */
async function recorded(method: string, code: string) {
  const logged = log.lines.filter((l) => l.method === method && l.code === code).length;
  return { logged, counted: await callsCounted(t.server, method, code) };
}

/** Runs `send` and answers what it got, checking that it added one call of `method`/`code`. */
async function oneCall(method: string, code: string, send: () => Promise<RawAnswer>) {
  const before = await recorded(method, code);
  const answer = await send();
  expect(await recorded(method, code)).toEqual({
    logged: before.logged + 1,
    counted: before.counted + 1,
  });
  return answer;
}

/** The JSON-RPC error of an answer. */
function errorOf(answer: RawAnswer): unknown {
  return answer.body?.error;
}

describe("JSON-RPC errors before any tool runs", () => {
  test("a body that is not JSON is -32700", async () => {
    const answer = await oneCall("/mcp", "invalid_argument", () => mcpPost(t.url, "{not json"));
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      jsonrpc: "2.0",
      error: { code: -32700, message: "Parse error: the body is not JSON" },
      id: null,
    });
  });

  test("JSON that is not one JSON-RPC message is -32600, a batch too", async () => {
    for (const body of [{ hello: "world" }, { jsonrpc: "1.0", id: 1, method: "ping" }, [], 42]) {
      const answer = await oneCall("/mcp", "invalid_argument", () => mcpPost(t.url, body));
      expect(answer.status).toBe(400);
      expect(errorOf(answer)).toEqual({
        code: -32600,
        message: "Invalid Request: the body is not one JSON-RPC 2.0 message",
      });
    }
  });

  test("a method the endpoint does not answer is -32601", async () => {
    const body = { jsonrpc: "2.0", id: 7, method: "resources/list", params: {} };
    const answer = await oneCall("/mcp", "unimplemented", () => mcpPost(t.url, body));
    expect(answer.body).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32601 } });
  });

  test("an unknown tool is -32602 in every protocol version", async () => {
    for (const version of ["2025-06-18", "2025-11-25"]) {
      const body = toolsCall("start_task", ARGS, toolMeta(sessionId));
      const answer = await oneCall("/mcp", "invalid_argument", () =>
        mcpPost(t.url, body, { "mcp-protocol-version": version }),
      );
      expect(answer.body).toEqual({
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32602, message: "Unknown tool: start_task" },
      });
    }
  });

  test("a body over MAX_REQUEST_BYTES is 413, refused before it is parsed", async () => {
    const body = toolsCall(
      "suggest_task",
      { ...ARGS, brief: "x".repeat(300 * 1024) },
      toolMeta(sessionId),
    );
    const answer = await oneCall("/mcp", "resource_exhausted", () => mcpPost(t.url, body));
    expect(answer.status).toBe(413);
    expect(errorOf(answer)).toEqual({
      code: -32000,
      message: "the request body is over 262144 bytes (MAX_REQUEST_BYTES)",
    });
  });

  test("without JWTs there is no protected resource metadata", async () => {
    const res = await fetch(`${t.url}/.well-known/oauth-protected-resource`);
    expect(res.status).toBe(404);
  });

  test("GET and DELETE /mcp are 405 with Allow: POST (no session is held)", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${t.url}/mcp`, { method, headers: { accept: "text/event-stream" } });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await res.json()).toEqual({
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method not allowed: /mcp answers POST only" },
        id: null,
      });
    }
  });
});

describe("bad arguments, as the negotiated version says", () => {
  const BAD: [string, Record<string, unknown>, string][] = [
    ["a field of the wrong type", { ...ARGS, title: 42 }, "suggest_task: title must be a string"],
    ["an unknown key", { ...ARGS, priority: "high" }, 'suggest_task: unknown argument "priority"'],
  ];

  test("2025-06-18: -32602", async () => {
    for (const [, args, message] of BAD) {
      const answer = await oneCall("/mcp/suggest_task", "invalid_argument", () =>
        mcpPost(t.url, toolsCall("suggest_task", args, toolMeta(sessionId))),
      );
      expect(answer.body).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message } });
    }
  });

  test("2025-11-25: a tool error the model can read", async () => {
    for (const [, args, text] of BAD) {
      const answer = await oneCall("/mcp/suggest_task", "invalid_argument", () =>
        mcpPost(t.url, toolsCall("suggest_task", args, toolMeta(sessionId)), {
          "mcp-protocol-version": "2025-11-25",
        }),
      );
      expect(answer.body).toEqual({
        jsonrpc: "2.0",
        id: 1,
        result: { content: [{ type: "text", text }], isError: true },
      });
    }
  });

  test("a missing or empty field is the reference's refusal, as a tool error", async () => {
    const chat = uniqueId("mcp-chat");
    await putSession(t.clients, { sessionId: chat });
    const missing = { title: "A title", tldr: "A tldr" };
    for (const args of [missing, { ...ARGS, brief: " " }]) {
      const answer = await oneCall("/mcp/suggest_task", "invalid_argument", () =>
        mcpPost(t.url, toolsCall("suggest_task", args, toolMeta(chat, { turnId: "t" }))),
      );
      const text = "suggest_task: brief must not be empty";
      expect(answer.body).toEqual({
        jsonrpc: "2.0",
        id: 1,
        result: { content: [{ type: "text", text }], isError: true },
      });
    }
    const refused = log.lines.filter((l) => l.sessionId === chat && l.refusal === "FIELD_EMPTY");
    expect(refused.map((l) => l.method)).toEqual(["/mcp/suggest_task", "/mcp/suggest_task"]);
    expect(await offeredRecords(t.redis, chat)).toEqual([]);
  });

  test("a chat id that is no id (a host's own id with a space) is -32602, never a Redis key", async () => {
    const meta = { "vscode.conversationId": "my chat {1}", "oda.suggest/turn_id": "t" };
    const answer = await oneCall("/mcp/suggest_task", "invalid_argument", () =>
      mcpPost(t.url, toolsCall("suggest_task", ARGS, meta)),
    );
    expect(answer.body).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: {
        code: -32602,
        message:
          "context.session_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
      },
    });
    expect(await keysOf(t.redis, "my chat ")).toEqual([]);
  });

  test("arguments that are not an object are -32602", async () => {
    const answer = await oneCall("/mcp/suggest_task", "invalid_argument", () =>
      mcpPost(t.url, toolsCall("suggest_task", "title=x", toolMeta(sessionId))),
    );
    expect(answer.body).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32602 } });
  });
});

/** POSTs `body` to /mcp over h2c; answers the status and the body's text. */
async function h2Post(url: string, body: string): Promise<{ status: number; body: string }> {
  const session = connect(url);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/mcp",
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-06-18",
      });
      let status = 0;
      let text = "";
      stream.on("response", (headers) => {
        status = Number(headers[":status"]);
      });
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        text += chunk;
      });
      stream.on("end", () => resolve({ status, body: text }));
      stream.on("error", reject);
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

describe("every listener", () => {
  test("HTTP/2 without TLS (h2c) reaches /mcp as HTTP/1.1 does, past the gRPC fast path", async () => {
    const answer = await h2Post(
      t.url,
      JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
    );
    expect(answer.status).toBe(200);
    const tools = (JSON.parse(answer.body) as { result: { tools: { name: string }[] } }).result
      .tools;
    expect(tools.map((tool) => tool.name)).toEqual([
      "suggest_task",
      "withdraw_suggestion",
      "list_suggestions",
    ]);
  });

  test("over h2c a body over MAX_REQUEST_BYTES is 413 too", async () => {
    const big = JSON.stringify(
      toolsCall("suggest_task", { ...ARGS, brief: "x".repeat(300 * 1024) }),
    );
    const answer = await oneCall("/mcp", "resource_exhausted", async () => {
      const { status, body } = await h2Post(t.url, big);
      return { status, headers: new Headers(), body: JSON.parse(body), text: body };
    });
    expect(answer.status).toBe(413);
    expect(errorOf(answer)).toMatchObject({ code: -32000 });
  });
});
