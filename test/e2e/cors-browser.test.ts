import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { browserSkipReason, bundleForBrowser, launchChromium } from "../support/browser.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { AUDIENCE, clientsWith, ISSUER, useJwtIssuer } from "../support/tenant-auth.js";

/*
 * CORS_ALLOWED_ORIGINS: a page of an allowed origin calls the service through
 * `@oda/suggest-task/web` with a person's JWT and gets the answer; a page of an origin
 * not allowed is refused by the browser itself. Both pages are served by HTTP servers of
 * their own on loopback, each its own origin, the service on another.
 */

const ADMIN = "admin-token-0123456789";
/** The page, as both page servers serve it. */
let page = "";
/** Two origins of pages, real HTTP servers on loopback (as the service is). */
const pageServers = [createServer(), createServer()] as const;
let ALLOWED = "";
let OTHER = "";
beforeAll(async () => {
  for (const server of pageServers) {
    server.on("request", (_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(page);
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  }
  [ALLOWED, OTHER] = pageServers.map(
    (s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
  );
});
afterAll(() => {
  for (const server of pageServers) server.close();
});
const issuer = useJwtIssuer();
const t = useTestServer({
  settings: () => ({
    authTokens: [{ role: "host-admin", token: ADMIN }],
    authJwt: { jwksFile: issuer.jwksFile, issuer: ISSUER, audience: AUDIENCE },
    corsAllowedOrigins: [ALLOWED],
  }),
});

/** The page's program: one ListSuggestions through the SDK's web entry, with a JWT. */
const PAGE_PROGRAM = `
import { createSuggestionClient } from "./sdk/src/web.ts";

const query = new URLSearchParams(location.search);
const client = createSuggestionClient({
  baseUrl: query.get("service") ?? "",
  token: query.get("token") ?? "",
  retry: false,
});
const w = window as unknown as { result?: unknown };
try {
  const lists = await client.listSuggestions({ sessionId: query.get("session") ?? "" });
  w.result = { titles: lists.open.map((s) => s.title) };
} catch (err) {
  w.result = { error: String(err) };
}
`;

let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
beforeAll(async () => {
  const { code } = await bundleForBrowser(PAGE_PROGRAM);
  page = `<!doctype html><meta charset="utf-8"><script type="module">${code}</script>`;
  if (browserSkipReason === undefined) browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

/** What the page of `origin` got, and what the browser said on its console. */
async function visit(origin: string, query: Record<string, string>) {
  if (browser === undefined) throw new Error("no browser");
  const console: string[] = [];
  const tab = await browser.context.newPage();
  tab.on("console", (m) => console.push(m.text()));
  await tab.goto(`${origin}/app.html?${new URLSearchParams(query)}`);
  const read = () => (globalThis as { result?: unknown }).result;
  await tab.waitForFunction(() => (globalThis as { result?: unknown }).result !== undefined);
  const result = await tab.evaluate(read);
  await tab.close();
  return { result, console };
}

describe.skipIf(browserSkipReason !== undefined)("CORS for pages of other origins", () => {
  test("an allowed origin's page gets its answer; another origin's is refused by the browser", async () => {
    const workspaceId = uniqueId("wa");
    const sessionId = uniqueId();
    await clientsWith(t.url, ADMIN).local.putSession({
      session: { sessionId, workspaceId, folder: FolderKind.NORMAL },
    });
    await clientsWith(
      t.url,
      await issuer.sign(`agent workspace:${workspaceId}`),
    ).suggestions.suggestTask({
      context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
      args: { title: "Seen across origins", tldr: "R", brief: "B" },
    });
    const query = {
      service: t.url,
      token: await issuer.sign(`app workspace:${workspaceId}`),
      session: sessionId,
    };
    const allowed = await visit(ALLOWED, query);
    expect(allowed.result).toEqual({ titles: ["Seen across origins"] });
    const other = await visit(OTHER, query);
    expect(other.result).toMatchObject({ error: expect.stringMatching(/Failed to fetch/) });
    expect(other.console.join("\n")).toContain(
      `from origin '${OTHER}' has been blocked by CORS policy`,
    );
  });
});
