import type { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { CallToolRequest, Server } from "@modelcontextprotocol/server";
import { SDK_VERSION } from "../version.js";

/*
 * The relay behind the `suggest-task-mcp` bin: an MCP server on stdio whose tools are the
 * service's own, answered by the service's `POST /mcp`. It lists and calls them there, so
 * the tools' definitions, texts and rules come from the service alone; it adds only the
 * chat the local agent host runs in (`oda.suggest/session_id`) where a call names none.
 */

/** The `_meta` key of a tools/call that names the calling chat. */
export const SESSION_META_KEY = "oda.suggest/session_id";

/** The official MCP packages' classes the relay is made of, loaded by the bin. */
export interface McpModules {
  readonly Server: typeof Server;
  readonly Client: typeof Client;
  readonly StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
}

/** Where the relay finds the service, and who calls it. */
export interface McpRelaySettings {
  /** The service's base URL; the relay speaks to `<url>/mcp`. */
  readonly url: string;
  /** Sent as `authorization: Bearer <token>` on every request to the service. */
  readonly token?: string | undefined;
  /** The chat given to calls whose `_meta` names none (from the environment). */
  readonly sessionId?: string | undefined;
}

/** `<base>/mcp`, whether or not the base URL ends with a slash. */
export function mcpEndpoint(base: string): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/mcp`;
  return url;
}

/**
 * A tools/call's params with `_meta["oda.suggest/session_id"]` set to `sessionId` when the
 * call names no chat of its own: a call that names one (a host that passes its chat per
 * call) keeps it, and a host's own conversation id in `_meta` (`threadId`,
 * `vscode.conversationId`) counts only where neither is given, as the service reads it.
 */
export function withSession(
  params: CallToolRequest["params"],
  sessionId: string | undefined,
): CallToolRequest["params"] {
  const meta = params._meta ?? {};
  if (!sessionId || typeof meta[SESSION_META_KEY] === "string") return params;
  return { ...params, _meta: { ...meta, [SESSION_META_KEY]: sessionId } };
}

/**
 * The MCP server the bin serves on stdio: `tools/list` and `tools/call` forwarded to the
 * service through the official MCP client over Streamable HTTP. The client connects on
 * the first request, not at start, so a host may start the relay before the service is
 * up; a request the service does not answer fails with the MCP client's error, which
 * the host receives as a JSON-RPC error.
 */
export function createMcpRelay(mcp: McpModules, settings: McpRelaySettings): Server {
  const endpoint = mcpEndpoint(settings.url);
  const headers: Record<string, string> =
    settings.token === undefined ? {} : { authorization: `Bearer ${settings.token}` };
  let upstream: Promise<Client> | undefined;

  const connect = async (): Promise<Client> => {
    const client = new mcp.Client({ name: "suggest-task-mcp", version: SDK_VERSION });
    const transport = new mcp.StreamableHTTPClientTransport(endpoint, {
      requestInit: { headers },
    });
    client.onclose = () => {
      upstream = undefined;
    };
    await client.connect(transport);
    return client;
  };

  /**
   * The service's client, connected once and shared by the requests that follow; made
   * again after a failed connect or a close. A failed call leaves it in place: the
   * service holds no session, so the next call's request is a new one either way.
   */
  const service = async <T>(call: (client: Client) => Promise<T>): Promise<T> => {
    upstream ??= connect();
    const current = upstream;
    let client: Client;
    try {
      client = await current;
    } catch (err) {
      if (upstream === current) upstream = undefined;
      throw err;
    }
    return call(client);
  };

  const server = new mcp.Server(
    { name: "suggest-task-mcp", version: SDK_VERSION },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler("tools/list", (request) =>
    service((client) => client.listTools(request.params)),
  );
  server.setRequestHandler("tools/call", (request) =>
    service((client) => client.callTool(withSession(request.params, settings.sessionId))),
  );
  return server;
}
