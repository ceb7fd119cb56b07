import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SuggestServer } from "../../server/server.js";
import { grpcJsUnary, loadHealth } from "../support/grpc-js.js";
import {
  eventually,
  ownRedis,
  sharedRedisUrl,
  spawnService,
  startTestServer,
  tempDir,
} from "../support/harness.js";
import { hasOpenssl, selfSignedCert } from "../support/tls-cert.js";

const run = promisify(execFile);

const TOKEN = "probe-test-token-0123456789";

/** `curl` of a path: its status and body; `how` picks HTTP/1.1, h2c or TLS. */
async function probe(
  url: string,
  path: string,
  how: "http1" | "h2c" | { cacert: string } = "http1",
): Promise<{ status: number; body: string }> {
  const args = ["--silent", "--max-time", "10", "--write-out", "\n%{http_code}"];
  if (how === "h2c") args.push("--http2-prior-knowledge");
  else if (how !== "http1") args.push("--cacert", how.cacert);
  const { stdout } = await run("curl", [...args, `${url}${path}`]);
  const at = stdout.lastIndexOf("\n");
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}

/** grpc.health.v1 Check's status for `service`, through grpc-js. */
async function healthOf(client: grpc.Client, service: string): Promise<string> {
  const res = await grpcJsUnary<{ status: string }>(client, "Check", { service });
  return res.status;
}

describe("GET /livez and GET /readyz, with AUTH_TOKENS set and no token sent", () => {
  let server: SuggestServer;
  let redis: Awaited<ReturnType<typeof ownRedis>>;
  beforeAll(async () => {
    redis = await ownRedis();
    server = await startTestServer(redis.url, {
      authTokens: [{ role: "app", token: TOKEN }],
    });
  });
  afterAll(async () => {
    await server?.close();
    redis?.remove();
  });

  test("both answer 200 over HTTP/1.1 and h2c while Redis answers; health SERVING for '' and the service", async () => {
    for (const how of ["http1", "h2c"] as const) {
      expect(await probe(server.url, "/livez", how)).toEqual({ status: 200, body: "live\n" });
      expect(await probe(server.url, "/readyz", how)).toEqual({ status: 200, body: "ready\n" });
    }
    const health = loadHealth(server.url);
    for (const service of ["", "oda.suggest.v1.SuggestionService"]) {
      expect(await healthOf(health, service)).toBe("SERVING");
    }
    health.close();
  });

  test("with Redis gone, /readyz is 503 saying so and health NOT_SERVING, while /livez stays 200", async () => {
    await redis.stop();
    const health = loadHealth(server.url);
    try {
      expect(await probe(server.url, "/readyz")).toEqual({
        status: 503,
        body: "not ready: Redis does not answer\n",
      });
      expect(await probe(server.url, "/livez")).toEqual({ status: 200, body: "live\n" });
      expect(await healthOf(health, "")).toBe("NOT_SERVING");
      expect(await healthOf(health, "oda.suggest.v1.SuggestionService")).toBe("NOT_SERVING");
    } finally {
      health.close();
    }
  });
});

describe.skipIf(!hasOpenssl)("the probes over TLS", () => {
  test("/livez and /readyz answer over TLS (HTTP/1.1 and HTTP/2)", async () => {
    const dir = tempDir("probes-tls");
    const files = await selfSignedCert(dir.dir);
    const server = await startTestServer(sharedRedisUrl(), {
      tlsCertFile: files.cert,
      tlsKeyFile: files.key,
      authTokens: [{ role: "app", token: TOKEN }],
    });
    try {
      expect(server.url).toMatch(/^https:/);
      for (const flag of ["--http1.1", "--http2"]) {
        const { stdout } = await run("curl", [
          "--silent",
          flag,
          "--cacert",
          files.cert,
          "--write-out",
          " %{http_code} %{http_version}",
          `${server.url}/readyz`,
        ]);
        expect(stdout).toBe(`ready\n 200 ${flag === "--http2" ? "2" : "1.1"}`);
      }
      expect(await probe(server.url, "/livez", { cacert: files.cert })).toEqual({
        status: 200,
        body: "live\n",
      });
    } finally {
      await server.close();
      dir.remove();
    }
  });
});

test("SIGTERM: /readyz is 503 and health NOT_SERVING at once, calls are still served within SHUTDOWN_DELAY_MS", async () => {
  const service = await spawnService(sharedRedisUrl(), {
    SHUTDOWN_DELAY_MS: "60000",
    SHUTDOWN_GRACE_MS: "1000",
    LOG_LEVEL: "silent",
  });
  const health = loadHealth(service.url);
  try {
    expect(await probe(service.url, "/readyz")).toEqual({ status: 200, body: "ready\n" });
    service.child.kill("SIGTERM");
    await eventually(async () => (await probe(service.url, "/readyz")).status === 503);
    expect(await probe(service.url, "/readyz")).toEqual({
      status: 503,
      body: "not ready: the server is shutting down\n",
    });
    expect(await probe(service.url, "/livez")).toEqual({ status: 200, body: "live\n" });
    expect(await healthOf(health, "")).toBe("NOT_SERVING");
    expect(await healthOf(health, "oda.suggest.v1.SuggestionService")).toBe("NOT_SERVING");
    // Still serving within the delay (60 s here): new connections and calls are answered.
    expect((await probe(service.url, "/metrics")).status).toBe(200);
    expect(service.child.exitCode).toBeNull();
  } finally {
    health.close();
    await service.kill("SIGKILL");
  }
});
