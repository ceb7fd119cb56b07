import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { freePort } from "../../server/redis/redis-server-process.js";
import { grpcClients, ownRedis, tempDir, uniqueId } from "../support/harness.js";

/*
 * The Dockerfile, built and run as an image. No registry is reachable and no container
 * runtime runs here, so: the base is a stand-in for the public node image, made once from
 * Debian packages and Node from npm (test/support/image-base.sh, cached); buildah builds
 * the Dockerfile on it (`--build-arg NODE_IMAGE=...`, chroot isolation); the image's
 * command then runs in the image's own files (`buildah mount`) with chroot, as the image's
 * user, against a Redis outside, as a container would reach one.
 */

const run = promisify(execFile);
const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "suggest-task-image");
const storage = ["--root", join(cache, "storage"), "--runroot", join(cache, "run")];
const conf = tempDir("containers");
const confFile = join(conf.dir, "containers.conf");
// The two settings buildah needs on these machines: no ulimits to set in the build's
// processes, and cgroups managed without systemd.
writeFileSync(
  confFile,
  '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\n',
);
const buildahEnv = { ...process.env, CONTAINERS_CONF: confFile };
const tag = "localhost/suggest-task:test";
const HOST_TOKEN = "image-host-admin-token";
const APP_TOKEN = "image-app-token-0123";
const missing = ["buildah", "debootstrap", "chroot"].filter(
  (tool) =>
    !(process.env.PATH ?? "").split(":").some((dir) => dir !== "" && existsSync(join(dir, tool))),
);

async function buildah(...args: string[]): Promise<string> {
  const { stdout } = await run("buildah", [...storage, ...args], {
    env: buildahEnv,
    maxBuffer: 64 << 20,
  });
  return stdout.trim();
}

let root = "";
let container = "";
let config: {
  User: string;
  Cmd: string[];
  Env: string[];
  WorkingDir: string;
  ExposedPorts: Record<string, unknown>;
};
const children: ChildProcess[] = [];

beforeAll(async () => {
  if (missing.length > 0) {
    throw new Error(
      `the image test needs ${missing.join(", ")}: apt-get install buildah debootstrap (the README names them)`,
    );
  }
  mkdirSync(cache, { recursive: true });
  const base = (
    await run("bash", ["test/support/image-base.sh", cache, "22"], {
      env: process.env,
      maxBuffer: 64 << 20,
    })
  ).stdout.trim();
  await buildah(
    "bud",
    "--isolation",
    "chroot",
    "--layers",
    "--quiet",
    "--build-arg",
    `NODE_IMAGE=${base}`,
    "-t",
    tag,
    ".",
  );
  config = (
    JSON.parse(await buildah("inspect", "--type", "image", tag)) as {
      OCIv1: { config: typeof config };
    }
  ).OCIv1.config;
  container = await buildah("from", "--quiet", tag);
  root = await buildah("mount", container);
}, 1_500_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  if (container !== "") {
    await buildah("umount", container).catch(() => undefined);
    await buildah("rm", container).catch(() => undefined);
  }
  conf.remove();
});

/** Runs the image's command in its files, as its user, with its environment and `env`. */
function runImage(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const [uid, gid] = config.User.split(":");
  const imageEnv = Object.fromEntries(
    config.Env.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );
  const command = config.Cmd.join(" ");
  const child = spawn(
    "chroot",
    [
      `--userspec=${uid}:${gid ?? uid}`,
      root,
      "/bin/sh",
      "-c",
      `cd ${config.WorkingDir} && exec ${command}`,
    ],
    { env: { ...imageEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output };
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | string>((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once("exit", (code, signal) => resolve(code ?? signal ?? -1));
  });

test("the image: a numeric non-root user, node as its command, port 8080 on 0.0.0.0, production dependencies only", () => {
  expect(config.User).toMatch(/^[1-9]\d*:\d+$/);
  expect(config.Cmd).toEqual(["node", "dist/server/main.js"]);
  expect(Object.keys(config.ExposedPorts)).toEqual(["8080/tcp"]);
  expect(config.Env).toEqual(expect.arrayContaining(["HOST=0.0.0.0", "PORT=8080"]));
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  const inside = join(root, config.WorkingDir, "node_modules");
  for (const name of Object.keys(pkg.dependencies))
    expect(existsSync(join(inside, name))).toBe(true);
  const devInside = Object.keys(pkg.devDependencies).filter((name) =>
    existsSync(join(inside, name)),
  );
  expect(devInside).toEqual([]);
  // Neither the sources nor a Redis are in it.
  expect(existsSync(join(root, config.WorkingDir, "server"))).toBe(false);
  expect(readdirSync(join(root, "usr/bin")).filter((f) => /redis|valkey/.test(f))).toEqual([]);
});

test("without REDIS_URL the container stops at once and says why", async () => {
  const { child, output } = runImage({});
  expect(await exitOf(child)).toBe(1);
  expect(output()).toContain(
    "suggest-task: REDIS_URL is not set, and redis-server (to run a private Redis) was not found on PATH.",
  );
});

test("run as its user against a Redis outside: ready, serves a call, stops on SIGTERM", async () => {
  const redis = await ownRedis();
  try {
    const port = await freePort();
    const started = Date.now();
    const { child, output } = runImage({
      REDIS_URL: redis.url,
      PORT: String(port),
      AUTH_TOKENS: `host-admin:${HOST_TOKEN},app:${APP_TOKEN}`,
      SHUTDOWN_DELAY_MS: "0",
    });
    const base = `http://127.0.0.1:${port}`;
    let ready = 0;
    for (let i = 0; i < 600 && ready !== 200; i++) {
      ready = await fetch(`${base}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ready, output()).toBe(200);
    console.log(
      `image: /readyz 200 ${Date.now() - started} ms after the container's command started`,
    );
    expect(output()).toMatch(/listening on http:\/\/0\.0\.0\.0:\d+ /);
    // The process runs as the image's user.
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(config.User.split(":")[0]);
    // A call through the image's service, recorded in the Redis outside.
    const session = uniqueId("img");
    const { local, suggestions } = grpcClients(base);
    await local.putSession(
      { session: { sessionId: session, workspaceId: "ws-img", folder: FolderKind.NORMAL } },
      { headers: { authorization: `Bearer ${HOST_TOKEN}` } },
    );
    const listed = await suggestions.listSuggestions(
      { sessionId: session },
      { headers: { authorization: `Bearer ${APP_TOKEN}` } },
    );
    expect(listed.open).toEqual([]);
    child.kill("SIGTERM");
    expect(await exitOf(child)).toBe(0);
    expect(output()).toContain("SIGTERM: shutting down");
  } finally {
    await redis.stop();
    redis.remove();
  }
});
