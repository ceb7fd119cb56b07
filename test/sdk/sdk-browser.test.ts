import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AgentRole, createLocalHostClient, createSuggestionClient } from "../../sdk/src/node.js";
import type { SuggestServer } from "../../server/server.js";
import { browserSkipReason, bundleForBrowser, launchChromium } from "../support/browser.js";
import { startTestServer, uniqueId } from "../support/harness.js";

/**
 * The page's program: the web entry of the SDK over the page's own origin (Connect over
 * fetch), listing one chat, reading one typed error and watching the chat; each step is
 * pushed onto `window.sdkSteps` for the test to read.
 */
const PAGE_PROGRAM = `
import { createSuggestionClient, isSuggestionNotFoundError } from "./sdk/src/web.ts";

const steps: unknown[] = [];
(window as unknown as { sdkSteps: unknown[] }).sdkSteps = steps;
const sessionId = new URLSearchParams(location.search).get("session") ?? "";
const client = createSuggestionClient({ baseUrl: location.origin });

const listed = await client.listSuggestions({ sessionId });
steps.push({ list: listed.open.map((s) => s.title) });
try {
  await client.getSuggestion({ sessionId, suggestionId: "missing" });
} catch (err) {
  steps.push({ typed: isSuggestionNotFoundError(err), code: (err as { errorCode?: string }).errorCode });
}
void (async () => {
  for await (const update of client.watchSuggestions({ sessionId })) {
    steps.push({ watch: update.open.map((s) => s.title) });
  }
})().catch((err: unknown) => steps.push({ error: String(err) }));
`;

describe("a browser bundle of the SDK", () => {
  test("the web entry bundles for the browser without any node: module or connect-node", async () => {
    const { code, inputs } = await bundleForBrowser(PAGE_PROGRAM);
    expect(inputs).toContain("sdk/src/web.ts");
    expect(inputs.some((input) => input.includes("@connectrpc/connect-web"))).toBe(true);
    expect(
      inputs.filter((input) => input.startsWith("node:") || input.includes("connect-node")),
    ).toEqual([]);
    expect(code).not.toMatch(/["']node:[a-z_/]+["']/);
  });

  test("the core entry bundles the same way", async () => {
    const { inputs } = await bundleForBrowser(`export * from "./sdk/src/index.ts";`);
    expect(inputs.filter((input) => /^node:|connect-(node|web)/.test(input))).toEqual([]);
  });

  test("the check can fail: the Node entry does not bundle for the browser", async () => {
    await expect(bundleForBrowser(`export * from "./sdk/src/node.ts";`)).rejects.toThrow(
      /node:http2|"http2"|node:/,
    );
  });
});

describe.skipIf(browserSkipReason !== undefined)(
  `the bundled SDK in headless Chromium${browserSkipReason === undefined ? "" : ` (skipped: ${browserSkipReason})`}`,
  () => {
    let server: SuggestServer;
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    let page: Page;
    beforeAll(async () => {
      server = await startTestServer();
      browser = await launchChromium();
      page = await browser.context.newPage();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    test("lists a chat's suggestions, gets a typed error and receives a watch update", async () => {
      const sessionId = uniqueId("sdk-browser");
      const options = { baseUrl: server.url };
      await createLocalHostClient(options).putSession({ session: { sessionId, workspaceId: "w" } });
      const client = createSuggestionClient(options);
      const offer = (turnId: string, title: string) =>
        client.suggestTask({
          context: { sessionId, turnId, role: AgentRole.TOP_LEVEL },
          args: { title, tldr: "Seen in a browser", brief: "Check the page." },
        });
      await offer("t1", "First offer");

      // The page is served on the service's own origin (intercepted here, before the service
      // serves pages of its own), so its calls are same-origin calls to the real server.
      const { code } = await bundleForBrowser(PAGE_PROGRAM);
      const pageUrl = `${server.url}/sdk-test.html?session=${sessionId}`;
      await page.route(pageUrl, (route) =>
        route.fulfill({
          contentType: "text/html",
          body: `<!doctype html><meta charset="utf-8"><script type="module">${code}</script>`,
        }),
      );
      await page.goto(pageUrl);
      const steps = () =>
        page.evaluate(() => (globalThis as { sdkSteps?: unknown[] }).sdkSteps ?? []);
      await page.waitForFunction(
        () =>
          ((globalThis as { sdkSteps?: { watch?: unknown }[] }).sdkSteps ?? []).some(
            (step) => step.watch !== undefined,
          ),
        undefined,
        { timeout: 10_000 },
      );
      await offer("t2", "Second offer");
      await page.waitForFunction(
        () =>
          ((globalThis as { sdkSteps?: { watch?: string[] }[] }).sdkSteps ?? []).some(
            (step) => step.watch?.[0] === "Second offer",
          ),
        undefined,
        { timeout: 10_000 },
      );
      expect(await steps()).toEqual([
        { list: ["First offer"] },
        { typed: true, code: "task-suggestion/not-found" },
        { watch: ["First offer"] },
        { watch: ["Second offer", "First offer"] },
      ]);
    }, 60_000);
  },
);
