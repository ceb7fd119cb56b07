import { spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { statFields, ThreadTimes, threadTime } from "../../bench/measure.js";

describe("a process's main thread from /proc", () => {
  it("reads the fields after the command's name, which may hold parentheses and spaces", () => {
    const line = "4242 (redis-server (x) 1) S 1 4242 4242 0 -1 4194560 1 0 0 0 17 23";
    expect(statFields(line).slice(0, 3)).toEqual(["S", "1", "4242"]);
    expect(statFields(line)[11]).toBe("17");
  });

  it("tells a thread running from one idle, and a process gone from both", async () => {
    expect(threadTime(process.pid)).toBe("run");
    const child = spawn("sleep", ["30"]);
    try {
      await once(child, "spawn");
      await sleep(50);
      expect(threadTime(child.pid as number)).toBe("idle");
      const times = new ThreadTimes({ sleeper: child.pid as number }, 2);
      await sleep(60);
      times.stop();
      const totals = times.totals();
      expect(Object.keys(totals).sort()).toEqual(["idle:sleeper", "io:sleeper", "run:sleeper"]);
      expect(totals["idle:sleeper"]).toBeGreaterThan(0);
      expect(totals["run:sleeper"]).toBe(0);
    } finally {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
    expect(threadTime(child.pid as number)).toBeUndefined();
  });
});
