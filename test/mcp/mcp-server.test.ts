import { getEventListeners } from "node:events";
import { create } from "@bufbuild/protobuf";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { expect, test } from "vitest";
import {
  type SuggestTaskRequest,
  SuggestTaskResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { mcpServer } from "../../server/mcp/mcp-server.js";
import type { McpToolCalls } from "../../server/mcp/mcp-tools.js";

// One request's MCP server, in process, over the SDK's own transport: what a tool call
// leaves behind on the long-lived shutdown signal once it is answered (nothing).

test("a tool call leaves no listener on the shutdown signal once answered", async () => {
  const shutdown = new AbortController();
  const seen: SuggestTaskRequest[] = [];
  const calls = {
    suggestTask: async (request: SuggestTaskRequest) => {
      seen.push(request);
      return create(SuggestTaskResponseSchema, { suggestion: { id: "s-1" }, result: "ok" });
    },
  } as unknown as McpToolCalls;
  const scope = {
    authorization: undefined,
    sessionHeader: "chat-1",
    protocolVersion: "2025-06-18",
    values: undefined,
    shutdownSignal: shutdown.signal,
  };
  for (let i = 0; i < 3; i++) {
    const server = mcpServer({ calls, refused: () => {}, version: "0" }, scope);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    const headers = new Headers({
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
      "mcp-protocol-version": "2025-06-18",
    });
    const body = {
      jsonrpc: "2.0",
      id: i,
      method: "tools/call",
      params: { name: "suggest_task", arguments: { title: "a", tldr: "b", brief: "c" } },
    };
    const request = new Request("http://localhost/mcp", { method: "POST", headers });
    const response = await transport.handleRequest(request, { parsedBody: body });
    expect(await response.json()).toMatchObject({
      result: { structuredContent: { suggestion_id: "s-1" } },
    });
    await server.close();
  }
  expect(seen.map((r) => r.context?.sessionId)).toEqual(["chat-1", "chat-1", "chat-1"]);
  expect(new Set(seen.map((r) => r.context?.turnId)).size).toBe(3);
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
});
