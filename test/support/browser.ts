import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { build } from "esbuild";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { tempDir } from "./harness.js";

/** Debian's `chromium` package; the tests never download a browser. */
export const CHROMIUM = "/usr/bin/chromium";

/** The repository's root, where a bundled page's imports are resolved from. */
const ROOT = resolve(import.meta.dirname, "../..");

/** Why the browser tests are skipped, or undefined when Chromium is installed. */
export const browserSkipReason: string | undefined = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium), as .ci/run does`;

/** Headless, and nothing that reaches the network by itself (updates, sync, QUIC probes). */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A headless Chromium with a fresh profile folder; `close` ends it and removes the folder. */
export async function launchChromium(): Promise<{
  context: BrowserContext;
  close: () => Promise<void>;
}> {
  const profile = tempDir("chromium");
  // launchPersistentContext passes the folder as --user-data-dir: a fresh profile each run.
  const context = await chromium.launchPersistentContext(profile.dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1024, height: 768 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      profile.remove();
    },
  };
}

/**
 * What the page asked the service and what failed: answers of 400 and more, requests that
 * got no answer, and console errors.
 */
export function watchFailures(page: Page): { calls: string[]; failures: string[] } {
  const seen = { calls: [] as string[], failures: [] as string[] };
  page.on("response", (res) => {
    const path = new URL(res.url()).pathname;
    if (path.startsWith("/oda.")) seen.calls.push(path);
    if (res.status() >= 400) seen.failures.push(`${res.status()} ${path}`);
  });
  page.on("requestfailed", (req) => {
    // A watch the page ends itself (closing the tab) is aborted, which is not a failure.
    if (req.failure()?.errorText !== "net::ERR_ABORTED") seen.failures.push(`failed ${req.url()}`);
  });
  page.on("console", (msg) => {
    if (msg.type() === "error") seen.failures.push(`console: ${msg.text()}`);
  });
  return seen;
}

/** Bundles `source` (a module resolved from the repository's root) as a browser would load it. */
export async function bundleForBrowser(
  source: string,
): Promise<{ code: string; inputs: string[] }> {
  const result = await build({
    stdin: { contents: source, resolveDir: ROOT, loader: "ts", sourcefile: "page.ts" },
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  return { code: result.outputFiles[0]?.text ?? "", inputs: Object.keys(result.metafile.inputs) };
}
