import type { Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type Suggestion,
  SuggestionSchema,
  SuggestionService,
  SuggestionState,
} from "../../sdk/src/node.js";
import { createOnePortServer } from "../../server/transport/one-port.js";
import { staticFiles } from "../../server/transport/static-files.js";
import { browserSkipReason, launchChromium } from "../support/browser.js";
import { tempDir } from "../support/harness.js";
import { buildInspector } from "../support/inspector-build.js";

/** An open suggestion of chat `sessionId` in workspace ws-a. */
const offered = (id: string, sessionId: string, title: string): Suggestion =>
  create(SuggestionSchema, {
    id,
    sessionId,
    title,
    tldr: `Why ${title}`,
    brief: `Do ${title}`,
    state: SuggestionState.OPEN,
    offeredAt: timestampNow(),
    workspaceId: "ws-a",
  });

const INBOX = [
  offered("s2", "chat-b", "Second chat's offer"),
  offered("s1", "chat-a", "First chat's offer"),
];

/** Resolves when the call is cancelled: a stream that stays open after its messages. */
const held = (signal: AbortSignal) =>
  new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));

/**
 * A SuggestionService of the test's own that serves the workspace inbox, and
 * whose first watch of chat-a breaks as a restarting service's would (UNAVAILABLE).
 */
function inboxService(): Partial<ServiceImpl<typeof SuggestionService>> {
  let chatWatches = 0;
  return {
    listSuggestions(req) {
      if (req.sessionId === "")
        throw new ConnectError("session_id is required", Code.InvalidArgument);
      return { open: INBOX.filter((s) => s.sessionId === req.sessionId) };
    },
    listWorkspaceSuggestions(req) {
      if (req.workspaceId === "")
        throw new ConnectError("workspace_id is required", Code.InvalidArgument);
      return { suggestions: INBOX };
    },
    async *watchWorkspaceSuggestions(req, context) {
      yield { suggestions: INBOX.filter((s) => s.workspaceId === req.workspaceId) };
      await held(context.signal);
    },
    async *watchSuggestions(req, context) {
      if (req.sessionId === "chat-a" && ++chatWatches === 1) {
        throw new ConnectError("the service is restarting", Code.Unavailable);
      }
      yield { open: INBOX.filter((s) => s.sessionId === req.sessionId), settled: [] };
      await held(context.signal);
    },
  };
}

describe.skipIf(browserSkipReason !== undefined)(
  `the inspector's workspace inbox in headless Chromium${browserSkipReason === undefined ? "" : ` (skipped: ${browserSkipReason})`}`,
  () => {
    let built: ReturnType<typeof tempDir>;
    let url: string;
    let close: () => Promise<void>;
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    beforeAll(async () => {
      built = tempDir("inspector-inbox");
      await buildInspector(built.dir);
      const page = staticFiles(built.dir);
      const service = inboxService();
      const { tcp, h1, h2 } = createOnePortServer(
        connectNodeAdapter({
          routes: (router) => router.service(SuggestionService, service),
          fallback: (req, res) => {
            if (page(req, res)) return;
            res.writeHead(404);
            res.end();
          },
        }),
      );
      const sessions = new Set<Http2Session>();
      h2.on("session", (session: Http2Session) => sessions.add(session));
      await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(tcp.address() as AddressInfo).port}`;
      close = async () => {
        h1.closeAllConnections();
        for (const session of sessions) session.destroy();
        await new Promise((resolve) => tcp.close(resolve));
      };
      browser = await launchChromium();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await close?.();
      built?.remove();
    });

    test("an inbox that answers is shown; its entries open their chats, whose watch comes back", async () => {
      const page = await browser.context.newPage();
      await page.goto(`${url}/`);
      await page.locator("#inbox").waitFor();
      await page.getByLabel("Workspace id").fill("ws-a");
      await page.getByRole("button", { name: "Open inbox" }).click();
      const entries = page.locator("#inbox-list > li");
      await entries.first().waitFor();
      expect(await entries.locator("h4").allTextContents()).toEqual([
        "Second chat's offer",
        "First chat's offer",
      ]);
      expect(await entries.locator("code").allTextContents()).toEqual(["chat-b", "chat-a"]);

      // chat-a's first watch breaks: the page says so while the SDK's watch reconnects, then
      // shows the lists. The reconnect waits a random part of 250 ms (full jitter), so the
      // status may read "reconnecting" for a moment only: every text it shows is recorded
      // as it is set.
      await page.evaluate(`(() => {
        const shown = [];
        globalThis.shownStatuses = shown;
        new MutationObserver((records) => {
          for (const record of records)
            for (const node of record.addedNodes) shown.push(node.textContent ?? "");
        }).observe(document.getElementById("chat-status"), { childList: true });
      })()`);
      await entries
        .filter({ hasText: "chat-a" })
        .getByRole("button", { name: "Open its chat" })
        .click();
      expect(await page.getByLabel("Chat id").inputValue()).toBe("chat-a");
      await page.locator("#chat-status", { hasText: "Live." }).waitFor({ timeout: 10_000 });
      const shown = await page.evaluate(
        () => (globalThis as { shownStatuses?: string[] }).shownStatuses ?? [],
      );
      const reconnecting = shown.indexOf("Chat chat-a: the service is restarting; reconnecting…");
      expect(reconnecting, shown.join(" | ")).toBeGreaterThanOrEqual(0);
      expect(shown.findIndex((text) => text.endsWith("Live."))).toBeGreaterThan(reconnecting);
      expect(await page.locator("#open-list > li h4").allTextContents()).toEqual([
        "First chat's offer",
      ]);
      await page.close();
    }, 60_000);
  },
);
