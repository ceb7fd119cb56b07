import { execFileSync } from "node:child_process";
import { accessSync, constants, readFileSync, symlinkSync } from "node:fs";
import { delimiter, join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { grpcClients, putSession, spawnService, tempDir, uniqueId } from "../support/harness.js";
import { offer } from "../support/suggest.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

/** Where `name` is on this process's PATH. */
function onPath(name: string): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // Not in this folder.
    }
  }
  throw new Error(`${name} is not on PATH`);
}

/** The version `<server> --version` prints (`Valkey server v=8.0.1 sha=...`). */
function versionOf(server: string): string {
  const out = execFileSync(server, ["--version"], { encoding: "utf8" });
  return /\bv=(\S+)/.exec(out)?.[1] ?? out;
}

/** The running process's name (Linux: /proc/<pid>/comm). */
function processName(pid: number): string {
  return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
}

test("with only valkey-server on PATH, npm start runs it as its private store, says so with its version, and takes it over after a crash", async () => {
  const bin = tempDir("valkey-only");
  cleanups.push(bin.remove);
  const valkey = onPath("valkey-server");
  symlinkSync(valkey, join(bin.dir, "valkey-server"));
  const data = tempDir("valkey-start");
  cleanups.push(data.remove);
  const env = { DATA_DIR: data.dir, PATH: bin.dir };

  const first = await spawnService(undefined, env);
  const socket = join(data.dir, "redis", "redis.sock");
  expect(first.output()).toContain(
    `private valkey-server ${versionOf(valkey)} on unix://${socket}, data in ${join(data.dir, "redis")}`,
  );
  const lock = JSON.parse(readFileSync(join(data.dir, "owner.lock"), "utf8")) as {
    redisPid: number;
  };
  expect(processName(lock.redisPid)).toBe("valkey-server");
  cleanups.push(() => {
    try {
      process.kill(lock.redisPid, "SIGKILL");
    } catch {
      // Stopped by the second start, as it should be.
    }
  });
  const sessionId = uniqueId("valkey");
  const clients = grpcClients(first.url);
  await putSession(clients, { sessionId });
  const acknowledged = (await offer(clients, { sessionId, title: "Kept on Valkey" })).suggestion
    ?.id;

  await first.kill("SIGKILL");
  const second = await spawnService(undefined, env);
  cleanups.push(() => second.kill("SIGTERM"));
  expect(
    second
      .output()
      .split("\n")
      .filter((line) => line.includes("took over")),
  ).toEqual([
    `suggest-task: took over ${data.dir}: stopped valkey-server process ${lock.redisPid} (clean shutdown, AOF kept) left running by process ${first.child.pid}, which is gone`,
  ]);
  const lists = await grpcClients(second.url).suggestions.listSuggestions({ sessionId });
  expect(lists.open.map((s) => s.id)).toEqual([acknowledged]);
});
