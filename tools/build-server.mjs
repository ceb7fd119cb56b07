// Builds the service into dist/ (tsc, then the Lua scripts and the OpenAPI document beside
// the JavaScript). With --if-stale it builds only when an input changed since the last
// build, so that `npm start` on an up-to-date build goes straight to the service. The
// inputs are server/, gen/, the TypeScript settings and the lockfile; a folder's own time
// counts too, so that a file deleted or renamed there rebuilds.
import { execFileSync } from "node:child_process";
import { cpSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const stamp = join(root, "dist/server/.built");
const inputs = ["server", "gen", "tsconfig.json", "tsconfig.build.json", "package-lock.json"];

/** The newest modification time of `path` and everything under it, in ms (0 when missing). */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce(
    (max, name) => Math.max(max, newest(join(path, name))),
    stat.mtimeMs,
  );
}

const ifStale = process.argv.includes("--if-stale");
if (!ifStale || newest(stamp) < Math.max(...inputs.map((p) => newest(join(root, p))))) {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
    stdio: "inherit",
  });
  cpSync(join(root, "server/store/lua"), join(root, "dist/server/store/lua"), { recursive: true });
  cpSync(join(root, "gen/openapi"), join(root, "dist/gen/openapi"), { recursive: true });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}
