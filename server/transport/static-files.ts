import { readFile } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

/** A request and its response, on either HTTP version, as connect-node's fallback gets them. */
type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Request = Parameters<Fallback>[0];
type Response = Parameters<Fallback>[1];

/** Answers a request it serves and returns true; returns false to let the caller answer. */
export type StaticHandler = (req: Request, res: Response) => boolean;

/** The content type of each kind of file a Vite build writes. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

/**
 * What every served file carries: the page runs only its own scripts and styles and talks
 * only to its own origin (the service), and no other site may frame it.
 */
const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
} as const;

/** The text a page that was never built answers with, saying what to do. */
export const NOT_BUILT_TEXT = "the inspector page is not built: run `npm run build`\n";

/**
 * Serves the built single-page app in `root` for GET and HEAD: `/` is `index.html`, any other
 * path a file under `root`. A path that leaves `root` (`..`, encoded or not), names a dot file
 * or folder (`.vite/`), holds a backslash or a NUL, or does not decode is not served (404), so
 * nothing outside the page's own files is ever read. Files under `assets/` have content hashes
 * in their names and are cached for good; `index.html` is revalidated. When `root` holds no
 * `index.html`, `/` answers 404 with `NOT_BUILT_TEXT`. Other methods and paths are left to the
 * caller (false), which answers them as before.
 */
export function staticFiles(root: string): StaticHandler {
  const base = resolve(root);
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    const path = pagePath(req.url ?? "/");
    if (path === undefined) return false;
    const file = resolve(join(base, path));
    if (!file.startsWith(base + sep)) return false;
    void readFile(file).then(
      (body) => send(req, res, 200, contentType(file), body, cacheControl(path)),
      () => {
        if (path !== "/index.html") {
          send(req, res, 404, CONTENT_TYPES[".txt"] as string, Buffer.from("not found\n"));
        } else {
          send(req, res, 404, CONTENT_TYPES[".txt"] as string, Buffer.from(NOT_BUILT_TEXT));
        }
      },
    );
    return true;
  };
}

/** The file path a request URL names (`/` is `/index.html`), or undefined when it is unsafe. */
function pagePath(url: string): string | undefined {
  const query = url.indexOf("?");
  const raw = query === -1 ? url : url.slice(0, query);
  let path: string;
  try {
    path = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  if (!path.startsWith("/") || path.includes("\\") || path.includes("\0")) return undefined;
  if (path === "/") return "/index.html";
  const segments = path.slice(1).split("/");
  if (segments.some((s) => s === "" || s.startsWith("."))) return undefined;
  return path;
}

function contentType(file: string): string {
  return CONTENT_TYPES[extname(file).toLowerCase()] ?? "application/octet-stream";
}

function cacheControl(path: string): string {
  return path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache";
}

function send(
  req: Request,
  res: Response,
  status: number,
  type: string,
  body: Buffer,
  cache = "no-store",
): void {
  res.writeHead(status, {
    ...PAGE_HEADERS,
    "content-type": type,
    "content-length": body.length,
    "cache-control": cache,
  });
  if (req.method === "HEAD") res.end();
  else res.end(body);
}
