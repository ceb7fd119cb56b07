import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { grpcClients, putSession, spawnService, tempDir, uniqueId } from "../support/harness.js";
import { offer } from "../support/suggest.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

/** The pid of the private redis-server named in the data folder's lock. */
function redisPidIn(dataDir: string): number {
  const owner = JSON.parse(readFileSync(join(dataDir, "owner.lock"), "utf8")) as {
    redisPid: number;
  };
  return owner.redisPid;
}

/** Whether a process runs (not gone, and not exited waiting to be reaped: state Z). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

test("after kill -9 of the service, the next start takes the data folder over and keeps every acknowledged offer", async () => {
  const data = tempDir("takeover");
  cleanups.push(data.remove);
  const first = await spawnService(undefined, { DATA_DIR: data.dir, LOG_LEVEL: "silent" });
  const leftRedis = redisPidIn(data.dir);
  cleanups.push(() => {
    try {
      process.kill(leftRedis, "SIGKILL");
    } catch {
      // Stopped by the second start, as it should be.
    }
  });
  const clients = grpcClients(first.url);
  const sessionId = uniqueId("crash");
  await putSession(clients, { sessionId });
  const acknowledged: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await offer(clients, { sessionId, title: `Offer ${i}` });
    acknowledged.push(res.suggestion?.id ?? "");
  }
  await first.kill("SIGKILL");
  // The private redis-server outlives the service, as after any crash.
  expect(running(leftRedis)).toBe(true);

  const second = await spawnService(undefined, { DATA_DIR: data.dir, LOG_LEVEL: "silent" });
  cleanups.push(() => second.kill("SIGTERM"));
  const tookOver = second
    .output()
    .split("\n")
    .filter((line) => line.includes("took over"));
  expect(tookOver).toEqual([
    `suggest-task: took over ${data.dir}: stopped redis-server process ${leftRedis} (clean shutdown, AOF kept) left running by process ${first.child.pid}, which is gone`,
  ]);
  expect(running(leftRedis)).toBe(false);
  const lists = await grpcClients(second.url).suggestions.listSuggestions({ sessionId });
  expect(lists.open.map((s) => s.id).sort()).toEqual(acknowledged.sort());
});
