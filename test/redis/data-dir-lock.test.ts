import { spawnSync } from "node:child_process";
import { readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { DataDirError, lockDataDir } from "../../server/redis/data-dir-lock.js";
import { tempDir } from "../support/harness.js";

const removals: (() => void)[] = [];
afterEach(() => {
  for (const remove of removals.splice(0)) remove();
});

function folder(): string {
  const { dir, remove } = tempDir("lock");
  removals.push(remove);
  return dir;
}

/** A pid that was a process a moment ago and is gone now. */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", "0"]).pid as number;
}

const lockFile = (dir: string) => join(dir, "owner.lock");

test("the lock holds this process's pid and, once noted, its redis-server's; release removes it", () => {
  const dir = folder();
  const lock = lockDataDir(join(dir, "data"));
  lock.noteRedis(4242);
  expect(JSON.parse(readFileSync(lockFile(join(dir, "data")), "utf8"))).toEqual({
    pid: process.pid,
    redisPid: 4242,
  });
  lock.release();
  expect(() => readFileSync(lockFile(join(dir, "data")))).toThrow();
});

test("a lock of a live process refuses, naming it; one of a dead process is taken over", () => {
  const dir = folder();
  writeFileSync(lockFile(dir), JSON.stringify({ pid: process.ppid }));
  expect(() => lockDataDir(dir)).toThrow(
    expect.objectContaining({
      message: `is in use by process ${process.ppid}`,
      holder: { pid: process.ppid, what: "service" },
    }),
  );
  writeFileSync(lockFile(dir), JSON.stringify({ pid: deadPid() }));
  lockDataDir(dir).release();
});

test("a dead service's live redis-server keeps the folder; this process's own pid in an old lock does not", () => {
  const dir = folder();
  const dead = deadPid();
  writeFileSync(lockFile(dir), JSON.stringify({ pid: dead, redisPid: process.ppid }));
  expect(() => lockDataDir(dir)).toThrow(
    `is in use by redis-server process ${process.ppid}, left running by process ${dead}, which is gone`,
  );
  // A container's service is pid 1 every time: a lock naming this pid is an earlier one's.
  writeFileSync(lockFile(dir), JSON.stringify({ pid: process.pid }));
  lockDataDir(dir).release();
});

test("an unreadable lock is being written by another start just now, or else stale", () => {
  const dir = folder();
  writeFileSync(lockFile(dir), "");
  expect(() => lockDataDir(dir)).toThrow("is being locked by another process just now");
  const old = new Date(Date.now() - 60_000);
  utimesSync(lockFile(dir), old, old);
  lockDataDir(dir).release();
});

test("a path that is a file is not a data folder", () => {
  const dir = folder();
  writeFileSync(join(dir, "file"), "x");
  expect(() => lockDataDir(join(dir, "file"))).toThrow(new DataDirError("must be a folder"));
  expect(() => lockDataDir(join(dir, "file", "below"))).toThrow(
    new DataDirError("must be a folder"),
  );
});
