import type { Socket } from "node:net";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { type Credentials, mayCall, presentedToken } from "../pipeline/auth.js";
import { SESSION_HEADER } from "./mcp-context.js";
import { type McpRequestScope, type McpServerParts, mcpServer } from "./mcp-server.js";
import { MCP_ROUTE, routeOf } from "./mcp-tools.js";

/** A request and its response, on either HTTP version, as connect-node's fallback gets them. */
type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type NodeRequest = Parameters<Fallback>[0];
type NodeResponse = Parameters<Fallback>[1];

/** Where MCP is served, on the service's own port. */
export const MCP_PATH = "/mcp";

/** RFC 9728's document of the protected resource (the MCP endpoint), with and without its path. */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/** The methods a client may send that the endpoint answers (notifications aside). */
const METHODS = new Set(["initialize", "ping", "tools/list", "tools/call"]);

/** What the endpoint is built from. */
export interface McpEndpointOptions extends McpServerParts {
  readonly credentials: Credentials;
  /** MAX_REQUEST_BYTES: a larger body is refused (413) before it is parsed. */
  readonly readMaxBytes: number;
  /** With JWT auth: the issuer that `authorization_servers` names (RFC 9728). */
  readonly issuer: string | undefined;
  readonly shutdownSignal?: AbortSignal;
  /** The context values of a connection (its verified client certificate). */
  readonly valuesOf?: ((socket: Socket) => ContextValues) | undefined;
}

/**
 * `POST /mcp`: the Model Context Protocol over Streamable HTTP, stateless (no session
 * is held: each request is served by a server of its own, mcp-server.ts), answered as
 * one JSON body (the transport's `enableJsonResponse`). Before the SDK reads anything:
 * - any other method on /mcp is 405 with `Allow: POST` (no server-held stream to GET);
 * - a body over MAX_REQUEST_BYTES is 413 (JSON-RPC -32000), unparsed;
 * - a body that is not JSON is -32700; JSON that is not one JSON-RPC message is -32600
 *   (a batch too: protocol versions from 2025-06-18 have none);
 * - with credentials configured, a request without a valid bearer token is 401, its
 *   `WWW-Authenticate` naming the resource metadata document when JWTs are accepted, and
 *   a token of no `agent` role is 403 (`insufficient_scope`);
 * each such refusal is logged and counted (`/mcp`), as is a method the endpoint does not
 * answer (-32601, the SDK's answer). `GET /.well-known/oauth-protected-resource` (with
 * or without `/mcp` after it) is RFC 9728's document when JWTs are accepted. Answers
 * true when the request was the endpoint's.
 */
export function mcpEndpoint(
  options: McpEndpointOptions,
): (req: NodeRequest, res: NodeResponse) => boolean {
  return (req, res) => {
    const path = req.url?.split("?", 1)[0];
    if (path === RESOURCE_METADATA_PATH || path === `${RESOURCE_METADATA_PATH}${MCP_PATH}`) {
      if (options.issuer === undefined || req.method !== "GET") return false;
      sendJson(res, 200, resourceMetadata(req, options.issuer), {
        "cache-control": "max-age=3600",
      });
      return true;
    }
    if (path !== MCP_PATH) return false;
    if (req.method !== "POST") {
      sendJson(res, 405, rpcError(-32000, "Method not allowed: /mcp answers POST only"), {
        allow: "POST",
      });
      return true;
    }
    void serve(options, req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, rpcError(-32603, "Internal error"));
      else res.end();
      options.refused(MCP_ROUTE, ConnectError.from(err));
    });
    return true;
  };
}

async function serve(
  options: McpEndpointOptions,
  req: NodeRequest,
  res: NodeResponse,
): Promise<void> {
  const refuse = (status: number, code: number, message: string, grpc: Code, headers = {}) => {
    options.refused(MCP_ROUTE, new ConnectError(message, grpc));
    sendJson(res, status, rpcError(code, message), headers);
  };
  const body = await readBody(req, options.readMaxBytes);
  if (body === undefined) {
    const message = `the request body is over ${options.readMaxBytes} bytes (MAX_REQUEST_BYTES)`;
    // HTTP/1.1: the rest of the body is not read, so the connection cannot carry another request.
    const close = req.httpVersionMajor === 1 ? { connection: "close" } : {};
    return refuse(413, -32000, message, Code.ResourceExhausted, close);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return refuse(400, -32700, "Parse error: the body is not JSON", Code.InvalidArgument);
  }
  if (!isJsonRpcMessage(parsed)) {
    const message = "Invalid Request: the body is not one JSON-RPC 2.0 message";
    return refuse(400, -32600, message, Code.InvalidArgument);
  }
  const authorization = req.headers.authorization;
  const denied = await deniedCredential(options, authorization);
  if (denied !== undefined) {
    const challenge = challengeOf(req, options.issuer, denied);
    const [status, grpc] =
      denied === "unauthenticated" ? [401, Code.Unauthenticated] : [403, Code.PermissionDenied];
    const message =
      denied === "unauthenticated"
        ? "a valid bearer token is required"
        : "a token of the agent role is required";
    return refuse(status, -32001, message, grpc, { "www-authenticate": challenge });
  }
  recordSdkRefusal(options, parsed);
  const scope: McpRequestScope = {
    authorization,
    sessionHeader: header(req, SESSION_HEADER),
    protocolVersion: header(req, "mcp-protocol-version"),
    values: options.valuesOf?.(req.socket),
    shutdownSignal: options.shutdownSignal,
  };
  const server = mcpServer(options, scope);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const response = await transport.handleRequest(webRequestOf(req), { parsedBody: parsed });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const answer = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...headers, "content-length": answer.length });
    res.end(answer);
  } finally {
    void server.close().catch(() => {});
  }
}

/**
 * Logs and counts a request the SDK refuses before a tool runs: a method the endpoint
 * does not answer (-32601), a `tools/call` whose params are malformed (-32602).
 */
function recordSdkRefusal(options: McpEndpointOptions, message: Record<string, unknown>): void {
  const { method, params } = message as { method?: unknown; params?: Record<string, unknown> };
  if (!("id" in message) || typeof method !== "string") return;
  if (!METHODS.has(method)) {
    options.refused(MCP_ROUTE, new ConnectError(`Method not found: ${method}`, Code.Unimplemented));
    return;
  }
  if (method !== "tools/call") return;
  const name = params?.name;
  const args = params?.arguments;
  const argsOk =
    args === undefined || (typeof args === "object" && args !== null && !Array.isArray(args));
  if (typeof name === "string" && argsOk) return;
  const route = routeOf(typeof name === "string" ? name : "");
  options.refused(route, new ConnectError("Invalid tools/call request", Code.InvalidArgument));
}

/** Why the request's credential may not use the tools; undefined when it may (or none is configured). */
async function deniedCredential(
  options: McpEndpointOptions,
  authorization: string | undefined,
): Promise<"unauthenticated" | "forbidden" | undefined> {
  const { credentials } = options;
  if (!credentials.enabled) return undefined;
  const token = presentedToken(authorization ?? null);
  // A verified client certificate without a token: the call pipeline admits it or not.
  if (token === undefined && credentials.acceptsCertificates && options.valuesOf !== undefined) {
    return undefined;
  }
  const principal = await credentials.principalOf(token);
  if (principal === undefined) return "unauthenticated";
  return mayCall(principal.roles, `${MCP_PATH}/suggest_task`) ? undefined : "forbidden";
}

/** The `WWW-Authenticate` of a refused credential (RFC 6750; RFC 9728 section 5.1 with JWTs). */
function challengeOf(
  req: NodeRequest,
  issuer: string | undefined,
  denied: "unauthenticated" | "forbidden",
): string {
  const parts = ["Bearer"];
  const params: string[] = [];
  if (issuer !== undefined) {
    params.push(`resource_metadata="${originOf(req)}${RESOURCE_METADATA_PATH}"`);
  }
  if (denied === "forbidden") params.push('error="insufficient_scope"', 'scope="agent"');
  return params.length === 0 ? (parts[0] as string) : `Bearer ${params.join(", ")}`;
}

/** RFC 9728's metadata of the MCP endpoint: the resource, its issuer, bearer tokens in the header. */
function resourceMetadata(req: NodeRequest, issuer: string): object {
  return {
    resource: `${originOf(req)}${MCP_PATH}`,
    authorization_servers: [issuer],
    bearer_methods_supported: ["header"],
    scopes_supported: ["agent"],
  };
}

/** `scheme://host[:port]` the client reached, from the connection and the Host (`:authority`). */
function originOf(req: NodeRequest): string {
  const tls = (req.socket as { encrypted?: boolean }).encrypted === true;
  const host = header(req, "host") ?? header(req, ":authority") ?? "localhost";
  return `${tls ? "https" : "http"}://${host}`;
}

function header(req: NodeRequest, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : value?.[0];
}

/** The request's body, or undefined once it is over `maxBytes` (its declared length too). */
async function readBody(req: NodeRequest, maxBytes: number): Promise<Buffer | undefined> {
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

/** One JSON-RPC 2.0 request, notification or response (not a batch). */
function isJsonRpcMessage(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== "2.0") return false;
  const id = message.id;
  if ("id" in message && typeof id !== "string" && typeof id !== "number") return false;
  if (typeof message.method === "string") return true;
  return "id" in message && ("result" in message || "error" in message);
}

/** The headers the SDK's transport reads, as a web request (its body is given parsed). */
function webRequestOf(req: NodeRequest): Request {
  const headers = new Headers();
  for (const name of ["accept", "content-type", "mcp-protocol-version"]) {
    const value = header(req, name);
    if (value !== undefined) headers.set(name, value);
  }
  return new Request(`http://localhost${MCP_PATH}`, { method: "POST", headers });
}

function rpcError(code: number, message: string): object {
  return { jsonrpc: "2.0", error: { code, message }, id: null };
}

function sendJson(
  res: NodeResponse,
  status: number,
  body: object,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  const text = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": text.length,
  });
  res.end(text);
}
