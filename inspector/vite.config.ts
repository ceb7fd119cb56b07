import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

/**
 * The inspector page: built by `npm run build` from inspector/ into dist/inspector/, which the
 * service serves at `GET /` (server/transport/static-files.ts). Everything the page needs is
 * in the build (no CDN, no web font, nothing fetched at run time but the service's own RPCs);
 * no inline script, so the page runs under the service's `default-src 'self'` policy.
 */
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/",
  publicDir: false,
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../dist/inspector", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
