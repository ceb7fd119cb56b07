import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SuggestServer } from "../../server/server.js";
import { browserSkipReason, launchChromium, watchFailures } from "../support/browser.js";
import {
  type Clients,
  grpcClients,
  putSession,
  startTestServer,
  tempDir,
  uniqueId,
} from "../support/harness.js";
import { buildInspector } from "../support/inspector-build.js";
import { offer } from "../support/suggest.js";

/*
 * The inspector page across a restart of the service (its watches are the SDK's, which
 * reconnect) and with a JWT that grants one workspace (it shows nothing of another's).
 */

const ISSUER = "https://issuer.inspector.test";
const AUDIENCE = "suggest-task";

let built: ReturnType<typeof tempDir>;
let keys: ReturnType<typeof tempDir>;
let sign: (scope: string) => Promise<string>;
beforeAll(async () => {
  built = tempDir("inspector-live");
  keys = tempDir("inspector-jwks");
  const key = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(key.publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  writeFileSync(join(keys.dir, "jwks.json"), JSON.stringify({ keys: [jwk] }));
  sign = (scope) =>
    new SignJWT({ scope })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(key.privateKey);
  await buildInspector(built.dir);
}, 120_000);
afterAll(() => {
  built?.remove();
  keys?.remove();
});

/** A card of the open list, found by its title. */
const openCard = (page: Page, title: string) => page.locator("#open-list > li", { hasText: title });

describe.skipIf(browserSkipReason !== undefined)(
  `the inspector, live, in headless Chromium${browserSkipReason === undefined ? "" : ` (skipped: ${browserSkipReason})`}`,
  () => {
    let open: SuggestServer;
    let grpc: Clients;
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    beforeAll(async () => {
      open = await startTestServer(undefined, { inspectorDir: built.dir });
      grpc = grpcClients(open.url);
      browser = await launchChromium();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await open?.close();
    });

    test("a restart of the service: the page says it is reconnecting, then shows a new offer without a reload", async () => {
      const settings = { inspectorDir: built.dir, shutdownGraceMs: 100 };
      let service = await startTestServer(undefined, settings);
      const port = service.port;
      try {
        const sessionId = uniqueId("inspector-restart");
        await putSession(grpc, { sessionId, workspaceId: uniqueId("ws") });
        await offer(grpc, { sessionId, title: "Before the restart" });
        const page = await browser.context.newPage();
        await page.goto(`${service.url}/#chat=${sessionId}`);
        await openCard(page, "Before the restart").waitFor();
        const chatStatus = page.locator("#chat-status");
        await chatStatus.filter({ hasText: "Live." }).waitFor();

        await service.close();
        await chatStatus.filter({ hasText: "reconnecting…" }).waitFor();
        // The last lists stay on the page meanwhile.
        expect(await openCard(page, "Before the restart").count()).toBe(1);

        service = await startTestServer(undefined, { ...settings, port });
        await offer(grpc, { sessionId, title: "After the restart" });
        await openCard(page, "After the restart").waitFor({ timeout: 20_000 });
        await chatStatus
          .filter({ hasText: `Chat ${sessionId}: 2 open, 0 settled. Live.` })
          .waitFor();
        await page.close();
      } finally {
        await service.close();
      }
    }, 40_000);

    test("with a JWT for workspace A, the page shows A's inbox and chats and nothing of B's", async () => {
      const jwtServer = await startTestServer(undefined, {
        inspectorDir: built.dir,
        authJwt: { jwksFile: join(keys.dir, "jwks.json"), issuer: ISSUER, audience: AUDIENCE },
      });
      try {
        const [wsA, wsB] = [uniqueId("ws-a"), uniqueId("ws-b")];
        const [chatA, chatB] = [uniqueId("chat-a"), uniqueId("chat-b")];
        await putSession(grpc, { sessionId: chatA, workspaceId: wsA });
        await putSession(grpc, { sessionId: chatB, workspaceId: wsB });
        await offer(grpc, { sessionId: chatA, title: "Tenant A's offer" });
        await offer(grpc, { sessionId: chatB, title: "Tenant B's offer" });

        const page = await browser.context.newPage();
        await page.goto(`${jwtServer.url}/`);
        await page.getByLabel("App token").fill(await sign(`app workspace:${wsA}`));
        await page.getByRole("button", { name: "Use token" }).click();

        // The one workspace it grants: said, and its inbox opened with A's offer alone.
        await page.locator("#grants", { hasText: `opens workspace ${wsA}, as app` }).waitFor();
        const inbox = page.locator("#inbox-list > li");
        await inbox.filter({ hasText: "Tenant A's offer" }).waitFor();
        expect(await inbox.locator("h4").allTextContents()).toEqual(["Tenant A's offer"]);

        // A's chat shows its offer; B's chat answers as an absent one; B's inbox is refused.
        await page.getByLabel("Chat id").fill(chatA);
        await page.getByRole("button", { name: "Open chat" }).click();
        await openCard(page, "Tenant A's offer").waitFor();
        await page.getByLabel("Chat id").fill(chatB);
        await page.getByRole("button", { name: "Open chat" }).click();
        await page
          .locator("#chat-status", { hasText: `Chat ${chatB}: 0 open, 0 settled. Live.` })
          .waitFor();
        await page.getByLabel("Workspace id").fill(wsB);
        await page.getByRole("button", { name: "Open inbox" }).click();
        await page
          .locator("#inbox-status", { hasText: `this credential is not granted workspace ${wsB}` })
          .waitFor();
        expect(await inbox.count()).toBe(0);
        expect(await page.locator("body").textContent()).not.toContain("Tenant B's offer");

        // A reload with the token kept for the tab: no call fails, nothing on the console.
        await page.goto(`${jwtServer.url}/#chat=${chatA}`);
        const seen = watchFailures(page);
        await page.reload();
        await openCard(page, "Tenant A's offer").waitFor();
        await inbox.filter({ hasText: "Tenant A's offer" }).waitFor();
        expect(seen.calls.length).toBeGreaterThan(0);
        expect(seen.failures).toEqual([]);
        await page.close();
      } finally {
        await jwtServer.close();
      }
    }, 30_000);
  },
);
