// Builds the package in both module formats, as connect-es publishes its own: ES modules in
// dist/esm, CommonJS in dist/cjs, whose package.json says so (each with its .d.ts files, so
// TypeScript reads each format's own declarations). `npm pack` runs it (prepack).
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync("dist", { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.cjs.json"]) {
  execFileSync(process.execPath, [tsc, "-p", project], { stdio: "inherit" });
}
writeFileSync("dist/cjs/package.json", `${JSON.stringify({ type: "commonjs" })}\n`);
