// Builds the inspector page (inspector/ into dist/inspector/) with Vite. With --if-stale it
// builds only when a source is newer than the last build, so `npm start` after the first
// start costs no page build: the page's inputs are inspector/, the SDK and gen/ it bundles,
// and the lockfile (a dependency upgrade rebuilds it).
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const config = join(root, "inspector/vite.config.ts");
const built = join(root, "dist/inspector/index.html");
const inputs = ["inspector", "sdk/src", "gen", "package-lock.json"].map((p) => join(root, p));

/** The newest modification time under `path`, in ms (0 when it is missing). */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), 0);
}

const ifStale = process.argv.includes("--if-stale");
if (!ifStale || newest(built) < Math.max(...inputs.map(newest))) {
  // Vite is loaded only to build: a start with a fresh page does not pay for loading it.
  const { build } = await import("vite");
  await build({ configFile: config, logLevel: "warn" });
}
