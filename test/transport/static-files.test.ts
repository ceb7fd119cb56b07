import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SuggestServer } from "../../server/server.js";
import { NOT_BUILT_TEXT } from "../../server/transport/static-files.js";
import { startTestServer, tempDir } from "../support/harness.js";

const run = promisify(execFile);

/** What a request answered: status, headers and body. */
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** An HTTP/1.1 request whose path is sent exactly as given (no URL normalisation). */
function h1(
  url: string,
  path: string,
  method = "GET",
  options: https.RequestOptions & { ALPNProtocols?: string[] } = {},
): Promise<Answer> {
  const { protocol, hostname, port } = new URL(url);
  const lib = protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request({ hostname, port, path, method, ...options }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** An HTTP/2 request (h2c, or h2 over TLS with `ca`) with its `:path` exactly as given. */
function h2(url: string, path: string, method = "GET", ca?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, ca === undefined ? {} : { ca });
    session.on("error", reject);
    const req = session.request({ ":path": path, ":method": method });
    let body = "";
    let headers: http2.IncomingHttpHeaders = {};
    req.setEncoding("utf8");
    req.on("response", (h) => {
      headers = h;
    });
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      session.close();
      resolve({ status: Number(headers[":status"]), headers, body });
    });
    req.on("error", reject);
    req.end();
  });
}

/** A built page in `<dir>/page`, and a secret beside it that must never be served. */
function fixture(dir: string): string {
  const page = join(dir, "page");
  mkdirSync(join(page, "assets"), { recursive: true });
  mkdirSync(join(page, ".vite"));
  writeFileSync(join(page, "index.html"), "<!doctype html><title>inspector</title>");
  writeFileSync(join(page, "assets/index-abc123.js"), "console.log('page');");
  writeFileSync(join(page, "assets/index-abc123.css"), "body{}");
  writeFileSync(join(page, ".vite/manifest.json"), "{}");
  writeFileSync(join(dir, "secret.txt"), "SECRET");
  return page;
}

/** Paths that try to leave the page's folder or reach what it hides. */
const UNSAFE = [
  "/../secret.txt",
  "/%2e%2e/secret.txt",
  "/assets/..%2f..%2fsecret.txt",
  "/assets/%2e%2e/%2e%2e/secret.txt",
  "/..%5csecret.txt",
  "/assets/%00",
  "/.vite/manifest.json",
  "/%2evite/manifest.json",
  "//secret.txt",
  "/assets/",
  "/%E0%A4%A",
  "/nothing-here.js",
];

describe("the inspector page on the service's port", () => {
  let dir: ReturnType<typeof tempDir>;
  let server: SuggestServer;
  let unbuilt: SuggestServer;
  beforeAll(async () => {
    dir = tempDir("static");
    server = await startTestServer(undefined, { inspectorDir: fixture(dir.dir) });
    mkdirSync(join(dir.dir, "empty"));
    unbuilt = await startTestServer(undefined, { inspectorDir: join(dir.dir, "empty") });
  });
  afterAll(async () => {
    await server?.close();
    await unbuilt?.close();
    dir?.remove();
  });

  test.each([
    ["HTTP/1.1", h1],
    ["h2c", h2],
  ])("%s: GET / is index.html, assets have their types and are cached", async (_name, get) => {
    const page = await get(server.url, "/");
    expect(page).toMatchObject({ status: 200, body: "<!doctype html><title>inspector</title>" });
    expect(page.headers).toMatchObject({
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
    });
    expect(page.headers["content-security-policy"]).toContain("default-src 'self'");
    const js = await get(server.url, "/assets/index-abc123.js?v=1");
    expect(js).toMatchObject({ status: 200, body: "console.log('page');" });
    expect(js.headers).toMatchObject({
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "public, max-age=31536000, immutable",
    });
    const css = await get(server.url, "/assets/index-abc123.css");
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
    const head = await get(server.url, "/", "HEAD");
    expect(head).toMatchObject({ status: 200, body: "" });
    expect(head.headers["content-length"]).toBe(String(page.body.length));
  });

  test.each([
    ["HTTP/1.1", h1],
    ["h2c", h2],
  ])("%s: no path leaves the page's folder or shows a hidden file", async (_name, get) => {
    for (const path of UNSAFE) {
      const answer = await get(server.url, path);
      expect({ path, status: answer.status }).toEqual({ path, status: 404 });
      expect(answer.body).not.toContain("SECRET");
      expect(answer.body).not.toBe("{}");
    }
  });

  test("other methods, /metrics and the RPCs are answered as before", async () => {
    expect((await h1(server.url, "/", "POST")).status).toBe(404);
    expect((await h1(server.url, "/", "DELETE")).status).toBe(404);
    const metrics = await h1(server.url, "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain("# TYPE");
  });

  test("a page that was never built says so, and what to run", async () => {
    const answer = await h1(unbuilt.url, "/");
    expect(answer).toMatchObject({ status: 404, body: NOT_BUILT_TEXT });
    expect(NOT_BUILT_TEXT).toBe("the inspector page is not built: run `npm run build`\n");
  });
});

test.skipIf(!existsSync("/usr/bin/openssl"))(
  "over TLS, GET / is served on h2 and on HTTP/1.1 (ALPN)",
  async () => {
    const dir = tempDir("static-tls");
    const cert = join(dir.dir, "cert.pem");
    const key = join(dir.dir, "key.pem");
    // biome-ignore format: one openssl command
    await run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert]);
    const server = await startTestServer(undefined, {
      inspectorDir: fixture(dir.dir),
      tlsCertFile: cert,
      tlsKeyFile: key,
    });
    try {
      const ca = readFileSync(cert);
      const viaH2 = await h2(server.url, "/", "GET", ca);
      expect(viaH2).toMatchObject({ status: 200, body: "<!doctype html><title>inspector</title>" });
      const viaH1 = await h1(server.url, "/", "GET", { ca, ALPNProtocols: ["http/1.1"] });
      expect(viaH1).toMatchObject({ status: 200, body: "<!doctype html><title>inspector</title>" });
      expect((await h1(server.url, "/../secret.txt", "GET", { ca })).status).toBe(404);
    } finally {
      await server.close();
      dir.remove();
    }
  },
);
