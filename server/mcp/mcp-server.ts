import { Code, ConnectError, type ContextValues, createHandlerContext } from "@connectrpc/connect";
import { ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";
import type { CallRoute } from "../pipeline/call-pipeline.js";
import { readCallContext } from "./mcp-context.js";
import {
  isToolName,
  MCP_TOOLS,
  type McpToolCalls,
  readArguments,
  routeOf,
  runTool,
  specOf,
  type ToolResult,
  toolError,
} from "./mcp-tools.js";

/** The first protocol version whose clients are answered a tool's bad arguments as a tool error. */
const TOOL_ERROR_ARGUMENTS_FROM = "2025-11-25";

/** What one HTTP request to /mcp brings to the tools it calls. */
export interface McpRequestScope {
  /** The request's `authorization` header, which the call pipeline checks. */
  readonly authorization: string | undefined;
  /** The `Oda-Session-Id` header. */
  readonly sessionHeader: string | undefined;
  /** The `MCP-Protocol-Version` header: the version the client negotiated. */
  readonly protocolVersion: string | undefined;
  /** The context values of the connection (a verified client certificate). */
  readonly values: ContextValues | undefined;
  readonly shutdownSignal: AbortSignal | undefined;
}

/** What every request's server shares. */
export interface McpServerParts {
  readonly calls: McpToolCalls;
  /** Logs and counts a tool call refused before its RPC ran. */
  readonly refused: (route: CallRoute, error: ConnectError) => void;
  readonly version: string;
}

/**
 * The MCP server of one HTTP request (the endpoint is stateless: a server per request,
 * as the SDK's stateless Streamable HTTP idiom has it): the low-level `Server` of the
 * official SDK with `tools/list` (the three tools) and `tools/call`:
 * - an unknown tool is the protocol error -32602, as the specification lists unknown
 *   tools among protocol errors in every version;
 * - arguments of a wrong type or an unknown key are a tool error the model can read for
 *   clients of 2025-11-25 and later, and -32602 before, as each version's specification
 *   has input validation errors;
 * - a `_meta` context that does not read (mcp-context.ts) is a tool error;
 * - missing or empty fields go to the RPC, which answers its own refusal.
 * Each refusal made here is logged and counted under the tool's procedure.
 */
export function mcpServer(parts: McpServerParts, scope: McpRequestScope): Server {
  const server = new Server(
    { name: "suggest-task", version: parts.version },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler("tools/list", () => ({ tools: [...MCP_TOOLS] }));
  server.setRequestHandler("tools/call", async (request): Promise<ToolResult> => {
    const { name, arguments: args, _meta: meta } = request.params;
    const route = routeOf(name);
    const refuse = (text: string, asToolError: boolean): ToolResult => {
      parts.refused(route, new ConnectError(text, Code.InvalidArgument));
      if (asToolError) return toolError(text);
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, text);
    };
    if (!isToolName(name)) return refuse(`Unknown tool: ${name}`, false);
    const read = readArguments(specOf(name), name, args);
    if ("problem" in read) {
      const modern = (scope.protocolVersion ?? "") >= TOOL_ERROR_ARGUMENTS_FROM;
      return refuse(read.problem, modern);
    }
    const reading = readCallContext(
      meta as Record<string, unknown> | undefined,
      scope.sessionHeader,
    );
    if (reading.problem !== undefined) return refuse(reading.problem, true);
    const handlerContext = createHandlerContext({
      service: route.service,
      method: route.method,
      protocolName: "mcp",
      requestMethod: "POST",
      url: "/mcp",
      requestHeader:
        scope.authorization === undefined ? {} : { authorization: scope.authorization },
      ...(scope.shutdownSignal === undefined ? {} : { shutdownSignal: scope.shutdownSignal }),
      ...(scope.values === undefined ? {} : { contextValues: scope.values }),
    });
    try {
      return await runTool(parts.calls, name, read.values, reading.context, handlerContext);
    } catch (err) {
      const error = ConnectError.from(err);
      const code =
        error.code === Code.InvalidArgument
          ? ProtocolErrorCode.InvalidParams
          : ProtocolErrorCode.InternalError;
      throw new ProtocolError(code, error.rawMessage);
    }
  });
  return server;
}
