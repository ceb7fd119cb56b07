import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";

const CONFIG = resolve(import.meta.dirname, "../../inspector/vite.config.ts");

/**
 * Builds the inspector page into `outDir` with the project's Vite config, as `npm run build`
 * does into dist/inspector, so a test serves the page of the sources it runs with (also in a
 * clean clone, where nothing was built).
 */
export async function buildInspector(outDir: string): Promise<void> {
  const { build } = await import("vite");
  await build({ configFile: CONFIG, logLevel: "silent", build: { outDir, emptyOutDir: true } });
}

/** The gzipped size (level 9) of each JavaScript file of a built page, by file name. */
export function gzippedScripts(outDir: string): Record<string, number> {
  const assets = join(outDir, "assets");
  const sizes: Record<string, number> = {};
  for (const name of readdirSync(assets).filter((n) => n.endsWith(".js"))) {
    sizes[name] = gzipSync(readFileSync(join(assets, name)), { level: 9 }).length;
  }
  return sizes;
}
