import { mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { create } from "@bufbuild/protobuf";
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  ApprovalPolicy,
  ChatSettingsSchema,
  createLocalHostClient,
  DismissReason,
  MessageAuthor,
  Permission,
  SandboxMode,
  SettlementOutcome,
  settlementNotes,
} from "../../sdk/src/node.js";
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
import { buildInspector, gzippedScripts } from "../support/inspector-build.js";
import { offer } from "../support/suggest.js";
import { withdraw } from "../support/withdraw.js";

const ROOT = resolve(import.meta.dirname, "../..");
const APP_TOKEN = "app-token-0123456789abcdef";
const AGENT_TOKEN = "agent-token-0123456789abcdef";

/** The page's build, made once for this file from the sources under test. */
let built: ReturnType<typeof tempDir>;
beforeAll(async () => {
  built = tempDir("inspector");
  await buildInspector(built.dir);
}, 120_000);
afterAll(() => built?.remove());

test("the page's JavaScript, gzipped, stays under 100 KB and loads nothing from elsewhere", () => {
  const sizes = gzippedScripts(built.dir);
  expect(Object.keys(sizes).length).toBeGreaterThan(0);
  const total = Object.values(sizes).reduce((a, b) => a + b, 0);
  expect(total).toBeLessThan(100 * 1024);
  const html = readFileSync(join(built.dir, "index.html"), "utf8");
  expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
});

/** The offering chat's settings, which a started chat runs with. */
const SETTINGS = create(ChatSettingsSchema, {
  presetId: "careful-review",
  model: "model-large",
  permission: Permission.DEFAULT,
  sandbox: SandboxMode.WORKSPACE_WRITE,
  approval: ApprovalPolicy.ON_REQUEST,
});

/** A card of the open or settled list, found by its title. */
const cardIn = (page: Page, list: "open" | "settled", title: string): Locator =>
  page.locator(`#${list}-list > li`, { hasText: title });

/** The titles of a list's cards, in the order the page shows them. */
const titles = (page: Page, list: "open" | "settled") =>
  page.locator(`#${list}-list > li h4`).allTextContents();

describe.skipIf(browserSkipReason !== undefined)(
  `the inspector in headless Chromium${browserSkipReason === undefined ? "" : ` (skipped: ${browserSkipReason})`}`,
  () => {
    let open: SuggestServer;
    let guarded: SuggestServer;
    let grpc: Clients;
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    beforeAll(async () => {
      open = await startTestServer(undefined, { inspectorDir: built.dir });
      guarded = await startTestServer(undefined, {
        inspectorDir: built.dir,
        authTokens: [
          { role: "app", token: APP_TOKEN },
          { role: "agent", token: AGENT_TOKEN },
        ],
      });
      grpc = grpcClients(open.url);
      browser = await launchChromium();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await open?.close();
      await guarded?.close();
    });

    /** A chat in a workspace, and the page opened on it by typing its id. */
    async function openChat(page: Page, url: string) {
      const sessionId = uniqueId("inspector");
      await putSession(grpc, { sessionId, workspaceId: "ws-inspector", settings: SETTINGS });
      await page.goto(`${url}/`);
      await page.getByLabel("Chat id").fill(sessionId);
      await page.getByLabel("Chat id").press("Enter");
      await page.locator("#chat-status", { hasText: "Live." }).waitFor();
      return sessionId;
    }

    test("offers appear live; Start, Dismiss and Restore show the service's answers", async () => {
      const page = await browser.context.newPage();
      const sessionId = await openChat(page, open.url);
      // No AUTH_TOKENS: no token is asked for.
      expect(await page.locator("#token-form").isHidden()).toBe(true);
      // The service serves the workspace inbox: the page shows it beside the chat view.
      expect(await page.locator("#inbox").isHidden()).toBe(false);

      // An offer made over gRPC appears without a reload.
      await offer(grpc, {
        sessionId,
        title: "Retry the uploader",
        brief: "Add retries.\nThen test.",
      });
      await cardIn(page, "open", "Retry the uploader").waitFor();

      // Start, in its dialog with nothing changed: the new chat, its settings and the brief,
      // marked as the suggestion's.
      await cardIn(page, "open", "Retry the uploader")
        .getByRole("button", { name: "Start" })
        .click();
      await page.getByRole("button", { name: "Start chat" }).click();
      const started = page.locator("#started");
      await started.locator("h3", { hasText: "Retry the uploader" }).waitFor();
      expect(await started.locator(".badge.suggestion").textContent()).toBe(
        "From the suggestion, not the person",
      );
      expect(await started.locator(".messages .brief").textContent()).toBe(
        "Add retries.\nThen test.",
      );
      const settings = await started.locator(".settings").textContent();
      expect(settings).toContain("Presetcareful-review");
      expect(settings).toContain("Modelmodel-large");
      expect(settings).toContain("PermissionDefault");
      await cardIn(page, "settled", "Retry the uploader")
        .locator(".state", { hasText: "Started" })
        .waitFor();
      const chatId =
        (await cardIn(page, "settled", "Retry the uploader").locator("code").textContent()) ?? "";
      const { chat } = await createLocalHostClient({ baseUrl: open.url }).getChat({ chatId });
      expect(chat?.title).toBe("Retry the uploader");
      expect(chat?.messages.map((m) => m.text)).toEqual(["Add retries.\nThen test."]);

      // A dismissal, by keyboard, moves the card to the settled list.
      await offer(grpc, { sessionId, title: "Split the parser" });
      const dismiss = cardIn(page, "open", "Split the parser").getByRole("button", {
        name: "Dismiss",
      });
      await dismiss.focus();
      await page.keyboard.press("Enter");
      await page.getByLabel("Not wanted").check();
      await page.getByLabel(/^Note for the agent/).fill("The parser stays whole for now.");
      await page.getByRole("button", { name: "Dismiss suggestion" }).focus();
      await page.keyboard.press("Enter");
      const dismissed = cardIn(page, "settled", "Split the parser");
      await dismissed.locator(".state", { hasText: "Dismissed" }).waitFor();
      expect(await dismissed.locator(".meta").first().textContent()).toContain(
        "settled by the person",
      );
      expect(await cardIn(page, "open", "Split the parser").count()).toBe(0);

      // With three open, a restore fails with the service's exact message; so does a start.
      for (const title of ["Third", "Fourth", "Fifth"]) await offer(grpc, { sessionId, title });
      await cardIn(page, "open", "Third").waitFor();
      expect(await titles(page, "open")).toEqual(["Fifth", "Fourth", "Third"]);
      expect(await titles(page, "settled")).toEqual(["Retry the uploader", "Split the parser"]);
      // A dismissed card offers Restore alone, a started one nothing.
      expect(await dismissed.getByRole("button").allTextContents()).toEqual(["Restore"]);
      expect(await cardIn(page, "settled", "Retry the uploader").locator(".actions").count()).toBe(
        0,
      );
      await dismissed.getByRole("button", { name: "Restore" }).click();
      await dismissed
        .getByRole("alert")
        .filter({ hasText: "3 suggestions are already open" })
        .waitFor();

      // The workspace's inbox lists the chat's open offers, each opening its chat.
      await page.getByLabel("Workspace id").fill("ws-inspector");
      await page.getByRole("button", { name: "Open inbox" }).click();
      const inbox = page.locator("#inbox-list > li", { hasText: sessionId });
      await inbox.filter({ hasText: "Third" }).waitFor();
      expect(await inbox.locator("h4").allTextContents()).toEqual(["Fifth", "Fourth", "Third"]);

      // Labelled controls; readable at 375 px (nothing wider than the screen).
      expect(
        await page.evaluate(
          "[...document.querySelectorAll('input')].every((e) => e.labels.length > 0)",
        ),
      ).toBe(true);
      await page.screenshot({ path: screenshotPath(), fullPage: true });
      await page.setViewportSize({ width: 375, height: 800 });
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(375);
      await page.close();
    }, 60_000);

    test("the Start dialog: a model, a lower permission and an edited brief start the chat with them", async () => {
      const page = await browser.context.newPage();
      const sessionId = await openChat(page, open.url);
      await offer(grpc, {
        sessionId,
        title: "Trim the logs",
        brief: "Trim the logs.\nKeep a week.",
      });
      await cardIn(page, "open", "Trim the logs").getByRole("button", { name: "Start" }).click();

      // The offering chat's settings bound the choice: nothing above its permission.
      const dialog = page.locator("#start-dialog");
      await dialog
        .locator("#start-inherits", {
          hasText: "inherits model model-large and permission default",
        })
        .waitFor();
      expect(await dialog.getByLabel("Permission").locator("option").allTextContents()).toEqual([
        "As the offering chat (Default)",
        "Read only",
        "Default",
      ]);
      expect(await dialog.getByLabel("Brief").inputValue()).toBe("Trim the logs.\nKeep a week.");
      await dialog.getByLabel("Model").fill("model-small");
      await dialog.getByLabel("Permission").selectOption({ label: "Read only" });
      await dialog.getByLabel("Brief").fill("Trim the logs.\nKeep two weeks.");
      await dialog.getByRole("button", { name: "Start chat" }).click();

      // The started chat: the chosen settings, the edited brief still the suggestion's.
      const started = page.locator("#started");
      await started.locator("h3", { hasText: "Trim the logs" }).waitFor();
      expect(await dialog.isHidden()).toBe(true);
      const settings = await started.locator(".settings").textContent();
      expect(settings).toContain("Modelmodel-small");
      expect(settings).toContain("PermissionRead only");
      expect(await started.locator(".badge").allTextContents()).toEqual([
        "From the suggestion, not the person",
        "Edited by the person",
      ]);

      // The host's record and the settlement the offering agent reads.
      const settled = cardIn(page, "settled", "Trim the logs");
      await settled
        .locator(".choices", {
          hasText: "Started with model model-small, permission read only, an edited brief.",
        })
        .waitFor();
      expect(await settled.locator(".actions").count()).toBe(0);
      const chatId = (await settled.locator("code").textContent()) ?? "";
      const { chat } = await grpc.local.getChat({ chatId });
      expect(chat?.settings?.model).toBe("model-small");
      expect(chat?.settings?.permission).toBe(Permission.READ_ONLY);
      expect(
        chat?.messages.map((m) => [m.text, MessageAuthor[m.author], m.edited] as const),
      ).toEqual([["Trim the logs.\nKeep two weeks.", "SUGGESTION", true]]);
      const { settlements } = await grpc.suggestions.listSettlements({ sessionId });
      const last = settlements.at(-1);
      expect(last?.outcome).toBe(SettlementOutcome.STARTED);
      expect(last?.chatId).toBe(chatId);
      expect({ ...last?.startOptions, $typeName: undefined }).toEqual({
        $typeName: undefined,
        model: "model-small",
        permission: Permission.READ_ONLY,
        brief: "Trim the logs.\nKeep two weeks.",
      });
      await page.close();
    }, 30_000);

    test("a dismissal's reason and note reach the settlement; a withdrawn card offers Restore, a drafted one nothing", async () => {
      const page = await browser.context.newPage();
      const sessionId = await openChat(page, open.url);
      await offer(grpc, { sessionId, title: "Bump the linter" });
      await cardIn(page, "open", "Bump the linter")
        .getByRole("button", { name: "Dismiss" })
        .click();
      const dialog = page.locator("#dismiss-dialog");
      expect(await dialog.getByRole("radio").count()).toBe(5);
      await dialog.getByLabel("Already done").check();
      await dialog.getByLabel(/^Note for the agent/).fill("  Done in the release branch.  ");
      await dialog.getByRole("button", { name: "Dismiss suggestion" }).click();

      const dismissed = cardIn(page, "settled", "Bump the linter");
      await dismissed.locator(".choices", { hasText: "Dismissed as already done." }).waitFor();
      expect(await dismissed.locator(".choices q").textContent()).toBe(
        "Done in the release branch.",
      );
      expect(await dismissed.getByRole("button").allTextContents()).toEqual(["Restore"]);
      const { settlements } = await grpc.suggestions.listSettlements({ sessionId });
      const last = settlements.at(-1);
      expect([
        SettlementOutcome[last?.outcome ?? 0],
        DismissReason[last?.dismissReason ?? 0],
        last?.dismissNote,
      ]).toEqual(["DISMISSED", "ALREADY_DONE", "Done in the release branch."]);
      expect(settlementNotes(settlements)).toEqual([
        'The user dismissed your suggestion "Bump the linter" as already done; do not offer it again. Their note: Done in the release branch.',
      ]);

      // The agent's withdrawal: shown as such, and the person may still restore it.
      await offer(grpc, { sessionId, title: "Rename the flag" });
      await withdraw(grpc, { sessionId, title: "Rename the flag" });
      const withdrawn = cardIn(page, "settled", "Rename the flag");
      await withdrawn.locator(".state", { hasText: "Withdrawn" }).waitFor();
      expect(await withdrawn.locator(".meta").first().textContent()).toContain(
        "settled by the agent",
      );
      expect(await withdrawn.getByRole("button").allTextContents()).toEqual(["Restore"]);
      await withdrawn.getByRole("button", { name: "Restore" }).click();
      await cardIn(page, "open", "Rename the flag").waitFor();

      // Draft is final: its card offers no action.
      await offer(grpc, { sessionId, title: "Draft the changelog" });
      await cardIn(page, "open", "Draft the changelog")
        .getByRole("button", { name: "Draft" })
        .click();
      const drafted = cardIn(page, "settled", "Draft the changelog");
      await drafted.locator(".state", { hasText: "Drafted" }).waitFor();
      expect(await drafted.getByRole("button").count()).toBe(0);
      await page.close();
    }, 30_000);

    test("loading the page and a chat makes no failing call and logs no console error", async () => {
      const sessionId = uniqueId("inspector-load");
      await putSession(grpc, { sessionId, workspaceId: "ws-inspector", settings: SETTINGS });
      await offer(grpc, { sessionId, title: "Loaded offer" });
      const page = await browser.context.newPage();
      const seen = watchFailures(page);
      await page.goto(`${open.url}/#chat=${sessionId}`);
      await cardIn(page, "open", "Loaded offer").waitFor();
      await page.getByLabel("Workspace id").fill("ws-inspector");
      await page.getByRole("button", { name: "Open inbox" }).click();
      await page.locator("#inbox-status", { hasText: "Live." }).waitFor();
      expect(seen.calls.length).toBeGreaterThan(0);
      expect(seen.failures).toEqual([]);
      await page.close();
    }, 30_000);

    test("with AUTH_TOKENS, nothing is shown without a valid app token, kept for the tab only", async () => {
      const page = await browser.context.newPage();
      await page.goto(`${guarded.url}/`);
      const form = page.locator("#token-form");
      await form.waitFor();
      expect(await page.locator("#app").isHidden()).toBe(true);

      // A wrong token, then a token of another role: still nothing but the form and the reason.
      await page.getByLabel("App token").fill("wrong-token-0000000000");
      await page.getByRole("button", { name: "Use token" }).click();
      await page.locator("#token-error", { hasText: "a valid bearer token is required" }).waitFor();
      await page.getByLabel("App token").fill(AGENT_TOKEN);
      await page.getByRole("button", { name: "Use token" }).click();
      await page
        .locator("#token-error", {
          hasText:
            "a token of the agent role may not call oda.suggest.v1.SuggestionService/ListSuggestions",
        })
        .waitFor();
      expect(await page.locator("#app").isHidden()).toBe(true);
      expect(await page.locator(".card").count()).toBe(0);
      expect(await page.evaluate("sessionStorage.length")).toBe(0);

      // The app token: in, and the lists show; the started chat from what the app may see.
      await page.getByLabel("App token").fill(APP_TOKEN);
      await page.getByRole("button", { name: "Use token" }).click();
      await page.locator("#app").waitFor();
      const sessionId = uniqueId("inspector-auth");
      await putSession(grpc, { sessionId, workspaceId: "ws-inspector", settings: SETTINGS });
      await offer(grpc, { sessionId, title: "Guarded offer", brief: "Only with a token." });
      await page.getByLabel("Chat id").fill(sessionId);
      await page.getByRole("button", { name: "Open chat" }).click();
      // The offering chat's settings are the host's (host-admin): the dialog offers every
      // permission, and the service refuses one above the offering chat's, in the dialog.
      await cardIn(page, "open", "Guarded offer").getByRole("button", { name: "Start" }).click();
      const dialog = page.locator("#start-dialog");
      await dialog
        .locator("#start-inherits", {
          hasText:
            "not readable here (a token of the app role may not call oda.suggest.v1.ChatHostService/GetSession)",
        })
        .waitFor();
      expect(await dialog.getByLabel("Permission").locator("option").allTextContents()).toEqual([
        "As the offering chat",
        "Read only",
        "Default",
        "Full access",
      ]);
      await dialog.getByLabel("Permission").selectOption({ label: "Full access" });
      await dialog.getByRole("button", { name: "Start chat" }).click();
      await dialog
        .getByRole("alert")
        .filter({
          hasText: "start options: permission full_access is above the offering chat's default",
        })
        .waitFor();
      await dialog.getByLabel("Permission").selectOption({ label: "Read only" });
      await dialog.getByRole("button", { name: "Start chat" }).click();
      const started = page.locator("#started");
      await started.locator(".note", { hasText: "ChatHostService/GetSession" }).waitFor();
      expect(await started.locator(".messages .brief").textContent()).toBe("Only with a token.");

      // Another tab has no token: the form again, nothing else.
      const other = await browser.context.newPage();
      await other.goto(`${guarded.url}/`);
      await other.locator("#token-form").waitFor();
      expect(await other.locator("#app").isHidden()).toBe(true);
      await other.close();
      await page.close();
    }, 60_000);
  },
);

/** docs/inspector.png when UPDATE_SCREENSHOT=1 (the README shows it), else a temporary file. */
function screenshotPath(): string {
  if (process.env.UPDATE_SCREENSHOT === "1") {
    mkdirSync(join(ROOT, "docs"), { recursive: true });
    return join(ROOT, "docs/inspector.png");
  }
  return join(built.dir, "inspector.png");
}
