import { execFile, spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterEach, expect, test } from "vitest";
import { spawnService, tempDir } from "../support/harness.js";
import { REFUSAL_TEXT, successText } from "../support/suggest.js";

const run = promisify(execFile);
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs the real `buf` binary from @bufbuild/buf, as the README shows it: no schema (reflection). */
async function bufCurl(url: string, method: string, data: unknown) {
  const args = [
    "buf",
    "curl",
    "--protocol",
    "grpc",
    "--http2-prior-knowledge",
    "-d",
    JSON.stringify(data),
    `${url}/${method}`,
  ];
  return run("npx", args, { encoding: "utf8" }).then(
    ({ stdout }) => ({ ok: true as const, out: JSON.parse(stdout) as unknown }),
    (err: { stderr: string }) => ({ ok: false as const, out: JSON.parse(err.stderr) as unknown }),
  );
}

test("with REDIS_URL unset the service runs a private redis-server; buf curl calls it", async () => {
  const data = tempDir("start");
  cleanups.push(data.remove);
  const service = await spawnService(undefined, { DATA_DIR: data.dir });
  cleanups.push(() => service.kill("SIGKILL"));
  expect(service.output()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ .*private redis-server/);
  // It reaches its redis-server over the Unix socket in DATA_DIR (permissions 700), the
  // only way in: no TCP port.
  const socket = join(data.dir, "redis", "redis.sock");
  // The start line names the server and the version it logged at start.
  const version = /\bv=(\S+)/.exec(
    (await run("redis-server", ["--version"], { encoding: "utf8" })).stdout,
  )?.[1];
  expect(service.output()).toContain(
    `private redis-server ${version} on unix://${socket}, data in `,
  );
  expect(statSync(socket).mode & 0o777).toBe(0o700);

  const put = await bufCurl(service.url, "oda.suggest.v1.LocalHostService/PutSession", {
    session: { sessionId: "chat-1", workspaceId: "ws-1", folder: "FOLDER_KIND_NORMAL" },
  });
  expect(put.ok).toBe(true);
  const context = { sessionId: "chat-1", turnId: "turn-1", role: "AGENT_ROLE_TOP_LEVEL" };
  const offered = await bufCurl(service.url, "oda.suggest.v1.SuggestionService/SuggestTask", {
    context,
    args: {
      title: "Add a retry to the uploader",
      tldr: "Uploads fail on flaky networks",
      brief: "...",
    },
  });
  expect(offered).toMatchObject({
    ok: true,
    out: {
      result: successText("Add a retry to the uploader"),
      suggestion: { state: "SUGGESTION_STATE_OPEN" },
    },
  });
  const refused = await bufCurl(service.url, "oda.suggest.v1.SuggestionService/SuggestTask", {
    context,
    args: { title: "Another", tldr: "x", brief: "y" },
  });
  expect(refused).toMatchObject({
    ok: false,
    out: {
      code: "resource_exhausted",
      message: REFUSAL_TEXT.turn,
      details: [{ type: "oda.suggest.v1.SuggestTaskRefusal" }, { type: "google.rpc.ErrorInfo" }],
    },
  });

  const own = new Redis({ path: socket, lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await own.connect();
    const others = ((await own.client("LIST")) as string)
      .trim()
      .split("\n")
      .filter((line) => !line.includes("cmd=client|list"));
    expect(others.length).toBeGreaterThan(0);
    for (const line of others) expect(line).toContain(`addr=${socket}:0`);
  } finally {
    own.disconnect();
  }

  // SIGTERM: the server drains, stops its redis-server and exits 0; the AOF is on disk.
  expect(await service.kill("SIGTERM")).toBe(0);
  expect(existsSync(join(data.dir, "redis", "appendonlydir"))).toBe(true);
  const redisGone = await new Promise((resolve) => {
    const socket = connect(join(data.dir, "redis", "redis.sock"));
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
  expect(redisGone).toBe(true);
});

test("without redis-server on PATH, the start says how to install one", async () => {
  const data = tempDir("nopath");
  cleanups.push(data.remove);
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    env: { PATH: "/nonexistent", PORT: "0", DATA_DIR: data.dir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise((resolve) => child.once("exit", resolve));
  expect(code).toBe(1);
  expect(stderr).toContain(
    "suggest-task: REDIS_URL is not set, and redis-server (to run a private Redis) was not found on PATH. Set REDIS_URL to a Redis you run, or install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis).",
  );
});

test("a bad setting stops the start with a message naming the variable", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    env: { ...process.env, PORT: "eighty", REDIS_URL: "redis://127.0.0.1:1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  expect(await new Promise((resolve) => child.once("exit", resolve))).toBe(1);
  expect(stderr).toContain(
    'suggest-task: PORT must be a whole number from 0 to 65535 (got "eighty")',
  );
});
