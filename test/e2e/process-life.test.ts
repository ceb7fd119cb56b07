import { execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, expect, test } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import { freePort } from "../../server/redis/redis-server-process.js";
import { grpcClients, putSession, spawnService, tempDir, uniqueId } from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";

// The service's life as an operator sees it: one owner per data folder, a failed start
// that cleans up and says why in one line, an unreachable Redis said out loud.
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs server/main.ts to its exit; answers the exit code and what it wrote. */
function runMain(env: Record<string, string>): Promise<{ code: unknown; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  cleanups.push(() => child.exitCode === null && child.kill("SIGKILL"));
  return exited.then((code) => ({ code, stderr }));
}

/** Pids of the redis-server processes whose data is in `dir` (redis-server runs in its --dir). */
function redisServersIn(dir: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
        return comm === "redis-server" && readlinkSync(`/proc/${pid}/cwd`) === join(dir, "redis");
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Pids of the processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((child) => {
      try {
        const stat = readFileSync(`/proc/${child}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** What a process runs, its arguments split. */
function commandOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
}

async function until(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const by = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > by) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("a second start on a DATA_DIR in use refuses, naming DATA_DIR and the running process", async () => {
  const data = tempDir("owner");
  cleanups.push(data.remove);
  const first = await spawnService(undefined, { DATA_DIR: data.dir });
  cleanups.push(() => first.kill("SIGTERM"));
  const second = await runMain({ DATA_DIR: data.dir });
  expect(second.code).toBe(1);
  expect(second.stderr).toBe(
    `suggest-task: DATA_DIR ${data.dir} is in use by process ${first.child.pid}; stop it first (kill ${first.child.pid}) or set another DATA_DIR\n`,
  );
  expect(redisServersIn(data.dir)).toHaveLength(1);
  expect(await first.kill("SIGTERM")).toBe(0);
  expect(existsSync(join(data.dir, "owner.lock"))).toBe(false);
});

test("a lock left by a kill -9: the next start stops the redis-server left running and takes the folder over", async () => {
  const data = tempDir("stale");
  cleanups.push(data.remove);
  const first = await spawnService(undefined, { DATA_DIR: data.dir });
  expect(await first.kill("SIGKILL")).toBe("SIGKILL");
  // The killed service's redis-server lives on, still writing to the folder.
  const [orphan] = redisServersIn(data.dir);
  expect(orphan).toBeGreaterThan(0);
  cleanups.push(() => {
    for (const pid of redisServersIn(data.dir)) process.kill(pid, "SIGKILL");
  });
  const next = await spawnService(undefined, { DATA_DIR: data.dir });
  cleanups.push(() => next.kill("SIGTERM"));
  expect(next.output()).toContain(
    `suggest-task: took over ${data.dir}: stopped redis-server process ${orphan} (clean shutdown, AOF kept) left running by process ${first.child.pid}, which is gone`,
  );
  expect(next.output()).toContain("listening on");
  expect(redisServersIn(data.dir)).not.toContain(orphan);
  const lock = JSON.parse(readFileSync(join(data.dir, "owner.lock"), "utf8"));
  expect(lock.pid).toBe(next.child.pid);
});

test("port in use: one line naming PORT, and the private redis-server is stopped", async () => {
  const data = tempDir("port");
  cleanups.push(data.remove);
  const taken = createServer();
  const port = await freePort();
  await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
  const result = await runMain({ DATA_DIR: data.dir, PORT: String(port) });
  expect(result.code).toBe(1);
  expect(result.stderr).toBe(
    `suggest-task: PORT ${port} is in use on 127.0.0.1; set PORT to a free port (0 picks one)\n`,
  );
  expect(redisServersIn(data.dir)).toEqual([]);
  expect(existsSync(join(data.dir, "owner.lock"))).toBe(false);
});

test("DATA_DIR pointing at a file: one line naming DATA_DIR", async () => {
  const data = tempDir("file");
  cleanups.push(data.remove);
  const file = join(data.dir, "not-a-folder");
  writeFileSync(file, "x");
  const result = await runMain({ DATA_DIR: file });
  expect(result.code).toBe(1);
  expect(result.stderr).toBe(`suggest-task: DATA_DIR ${file} must be a folder\n`);
});

test("an unreachable REDIS_URL is logged at start and while it lasts; health says NOT_SERVING until it answers", async () => {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const service = await spawnService(url);
  cleanups.push(() => service.kill("SIGKILL"));
  const health = createClient(Health, createGrpcTransport({ baseUrl: service.url }));
  const said = (text: string) => service.output().includes(text);
  await until(() => said(`Redis at ${url} is unreachable (`));
  expect((await health.check({})).status).toBe(Status.NOT_SERVING);
  await until(() => said(`Redis at ${url} is unreachable for 5 s (`), 8_000);
  const data = tempDir("late-redis");
  cleanups.push(data.remove);
  const redis = await startTestRedis({ dir: data.dir, port });
  cleanups.push(() => redis.stop());
  await until(() => said(`Redis at ${url} is reachable again`), 8_000);
  expect((await health.check({})).status).toBe(Status.SERVING);
});

/** The call log line of a PutSession, once a call was made: it must show up within 2 s. */
async function callLogShowsUp(output: () => string, url: string): Promise<void> {
  const clients = grpcClients(url);
  await putSession(clients, { sessionId: uniqueId() });
  await until(
    () => output().includes('"method":"/oda.suggest.v1.LocalHostService/PutSession"'),
    2_000,
  );
}

test("call logs reach a pipe within a second or so, not at the next 4 KB", async () => {
  const data = tempDir("pipe");
  cleanups.push(data.remove);
  const service = await spawnService(undefined, { DATA_DIR: data.dir });
  cleanups.push(() => service.kill("SIGTERM"));
  await callLogShowsUp(service.output, service.url);
});

test("call logs reach a terminal at once", async () => {
  const data = tempDir("tty");
  cleanups.push(data.remove);
  const port = await freePort();
  // script(1) runs the service on a pseudo-terminal and copies what it writes. Its shell
  // is $SHELL or sh; `exec` makes node the shell's successor whichever it is (dash keeps
  // itself as the parent otherwise, and the SIGTERM below would stop only dash).
  const child = spawn(
    "script",
    ["-qfec", `exec ${process.execPath} --import tsx server/main.ts`, "/dev/null"],
    {
      env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), DATA_DIR: data.dir },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  cleanups.push(async () => {
    for (const pid of childrenOf(child.pid as number)) process.kill(pid, "SIGTERM");
    await until(() => redisServersIn(data.dir).length === 0, 10_000);
    child.kill("SIGTERM");
  });
  await until(() => output.includes("listening on"), 20_000);
  await callLogShowsUp(() => output, `http://127.0.0.1:${port}`);
});

/** `npm start` on a free port with a data folder of its own; resolves once it listens. */
async function npmStart(prefix: string) {
  const data = tempDir(prefix);
  cleanups.push(data.remove);
  const npm = spawn("npm", ["start"], {
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", DATA_DIR: data.dir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  npm.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise((resolve) =>
    npm.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  cleanups.push(() => npm.exitCode === null && npm.kill("SIGKILL"));
  await until(() => output.includes("listening on"), 60_000);
  return { npm, data, exited };
}

test("npm start runs node itself, so kill -TERM of npm start stops node and its redis-server", async () => {
  const { npm, data, exited } = await npmStart("npm");
  const [service] = childrenOf(npm.pid as number);
  // No sh -c in between: npm's child is node itself, which gets the signal npm passes on.
  expect(commandOf(service as number)).toEqual([
    expect.stringMatching(/node$/),
    "dist/server/main.js",
  ]);
  expect(redisServersIn(data.dir)).toHaveLength(1);
  npm.kill("SIGTERM");
  await exited;
  await until(() => !existsSync(`/proc/${service}`) && redisServersIn(data.dir).length === 0);
}, 90_000);

test("npm start on an up-to-date build compiles nothing; a changed source builds again", async () => {
  execFileSync("npm", ["run", "-s", "build:server"], { stdio: "ignore" });
  const built = () => statSync("dist/server/main.js").mtimeMs;
  const before = built();
  const { npm, exited } = await npmStart("fresh");
  expect(built()).toBe(before);
  npm.kill("SIGTERM");
  await exited;
  // A source newer than the build (its content unchanged) is compiled again.
  const now = new Date();
  utimesSync("server/main.ts", now, now);
  execFileSync(process.execPath, ["tools/build-server.mjs", "--if-stale"], { stdio: "ignore" });
  expect(built()).toBeGreaterThan(before);
}, 120_000);
