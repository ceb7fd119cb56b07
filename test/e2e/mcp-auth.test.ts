import {
  discoverOAuthProtectedResourceMetadata,
  extractResourceMetadataUrl,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { describe, expect, test } from "vitest";
import { uniqueId } from "../support/harness.js";
import { callsCounted, mcpClient, mcpPost, toolMeta, toolsCall } from "../support/mcp.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";
import { REFUSAL_TEXT, successText } from "../support/suggest.js";
import { AUDIENCE, clientsWith, ISSUER, useJwtIssuer } from "../support/tenant-auth.js";
import { WITHDRAW_TEXT } from "../support/withdraw.js";

// The MCP endpoint takes the credentials gRPC takes (bearer tokens of the agent role,
// static or JWT) with their workspace grants; with JWTs it publishes RFC 9728's
// protected resource metadata, which a 401 names, as the MCP authorization spec asks.

const ADMIN = "admin-token-0123456789";
const STATIC_AGENT = "static-agent-token-0123456789";
const issuer = useJwtIssuer();
const own = useOwnRedis();
const t = useTestServer({
  redisUrl: () => own.url,
  settings: () => ({
    authTokens: [
      { role: "host-admin", token: ADMIN },
      { role: "agent", token: STATIC_AGENT },
    ],
    authJwt: { jwksFile: issuer.jwksFile, issuer: ISSUER, audience: AUDIENCE },
  }),
});

const ARGS = { title: "Retry failed uploads", tldr: "Uploads fail", brief: "Add retries." };

/** A chat of the embedded host in `workspaceId`. */
async function chatIn(workspaceId: string): Promise<string> {
  const sessionId = uniqueId("mcp-auth");
  await clientsWith(t.url, ADMIN).local.putSession({
    session: { sessionId, workspaceId, folder: 1 },
  });
  return sessionId;
}

describe("credentials", () => {
  test("without a valid token: 401 naming the resource metadata, counted; the document names the issuer", async () => {
    const before = await callsCounted(t.server, "/mcp", "unauthenticated");
    for (const headers of [{}, { authorization: "Bearer not-a-token" }]) {
      const answer = await mcpPost(t.url, toolsCall("suggest_task", ARGS), headers);
      expect(answer.status).toBe(401);
      expect(answer.headers.get("www-authenticate")).toBe(
        `Bearer resource_metadata="${t.url}/.well-known/oauth-protected-resource"`,
      );
      expect(answer.body).toEqual({
        jsonrpc: "2.0",
        error: { code: -32001, message: "a valid bearer token is required" },
        id: null,
      });
    }
    expect(await callsCounted(t.server, "/mcp", "unauthenticated")).toBe(before + 2);
    // RFC 9728 section 3.1: also at the path of the resource after the well-known prefix.
    for (const path of ["", "/mcp"]) {
      const res = await fetch(`${t.url}/.well-known/oauth-protected-resource${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(await res.json()).toEqual({
        resource: `${t.url}/mcp`,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ["header"],
        scopes_supported: ["agent"],
      });
    }
  });

  test("the official client finds the metadata from the 401, as its OAuth flow does", async () => {
    const res = await fetch(`${t.url}/mcp`, {
      method: "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    const url = extractResourceMetadataUrl(res);
    expect(url?.href).toBe(`${t.url}/.well-known/oauth-protected-resource`);
    const metadata = await discoverOAuthProtectedResourceMetadata(`${t.url}/mcp`, {
      ...(url === undefined ? {} : { resourceMetadataUrl: url }),
    });
    expect(metadata.authorization_servers).toEqual([ISSUER]);
  });

  test("a token of another role is 403 (insufficient_scope)", async () => {
    const app = await issuer.sign("app workspace:*");
    const answer = await mcpPost(t.url, toolsCall("suggest_task", ARGS), {
      authorization: `Bearer ${app}`,
    });
    expect(answer.status).toBe(403);
    expect(answer.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${t.url}/.well-known/oauth-protected-resource", error="insufficient_scope", scope="agent"`,
    );
    expect(answer.body).toMatchObject({
      error: { message: "a token of the agent role is required" },
    });
  });

  test("a static agent token and an agent JWT both offer through the official client", async () => {
    for (const token of [STATIC_AGENT, await issuer.sign("agent workspace:ws-a")]) {
      const sessionId = await chatIn("ws-a");
      const client = await mcpClient(t.url, { authorization: `Bearer ${token}` });
      try {
        const result = await client.callTool({
          name: "suggest_task",
          arguments: ARGS,
          _meta: toolMeta(sessionId, { turnId: "turn-1" }),
        });
        expect(result.content).toEqual([{ type: "text", text: successText(ARGS.title) }]);
      } finally {
        await client.close();
      }
    }
  });
});

describe("tenants", () => {
  test("a token of workspace A can neither see nor withdraw nor offer in B's chats", async () => {
    const chatB = await chatIn("ws-b");
    const tokenA = await issuer.sign("agent workspace:ws-a");
    const tokenB = await issuer.sign("agent workspace:ws-b");
    const asB = await mcpClient(t.url, { authorization: `Bearer ${tokenB}` });
    const asA = await mcpClient(t.url, { authorization: `Bearer ${tokenA}` });
    try {
      const meta = toolMeta(chatB, { turnId: "turn-b" });
      const offered = await asB.callTool({ name: "suggest_task", arguments: ARGS, _meta: meta });
      const id = (offered.structuredContent as { suggestion_id: string }).suggestion_id;
      const text = async (result: Promise<Record<string, unknown>>) => {
        const r = await result;
        return { text: (r.content as { text: string }[])[0]?.text, isError: r.isError === true };
      };
      expect(
        await text(asA.callTool({ name: "list_suggestions", arguments: {}, _meta: meta })),
      ).toEqual({
        text: JSON.stringify({ suggestions: [] }),
        isError: false,
      });
      const withdraw = { title: ARGS.title, reason: "Not needed" };
      expect(
        await text(asA.callTool({ name: "withdraw_suggestion", arguments: withdraw, _meta: meta })),
      ).toEqual({ text: WITHDRAW_TEXT.noSession, isError: true });
      const other = { ...ARGS, title: "Another one" };
      const aMeta = toolMeta(chatB, { turnId: "turn-a" });
      expect(
        await text(asA.callTool({ name: "suggest_task", arguments: other, _meta: aMeta })),
      ).toEqual({
        text: REFUSAL_TEXT.noSession,
        isError: true,
      });
      const listed = await text(
        asB.callTool({ name: "list_suggestions", arguments: {}, _meta: meta }),
      );
      expect(JSON.parse(listed.text ?? "")).toEqual({
        suggestions: [{ suggestion_id: id, title: ARGS.title, state: "open" }],
      });
    } finally {
      await asA.close();
      await asB.close();
    }
  });
});
