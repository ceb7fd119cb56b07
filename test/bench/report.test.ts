import { describe, expect, it } from "vitest";
import { coresText, limitOf } from "../../bench/report.js";

const cores = (server: number, generator: number, redis: number, machine: number) => ({
  server,
  generator,
  redis,
  machine,
});

describe("limitOf", () => {
  it("names the process near a full core, the busiest first", () => {
    expect(limitOf({ cores: cores(0.97, 0.3, 0.2, 1.5), machineCores: 2 })).toBe("server CPU");
    expect(limitOf({ cores: cores(0.6, 0.9, 0.2, 1.7), machineCores: 2 })).toBe("generator CPU");
    expect(limitOf({ cores: cores(0.5, 0.1, 0.95, 1.6), machineCores: 2 })).toBe("Redis CPU");
  });

  it("names the machine when all its cores are busy and no process is near one", () => {
    expect(limitOf({ cores: cores(0.5, 0.2, 0.1, 1.9), machineCores: 2 })).toBe(
      "machine busy (other processes used 1.10 of 2 cores)",
    );
  });

  it("names a main thread seldom idle when no process used a core: the less idle of two", () => {
    const shared = cores(0.81, 0.11, 0.52, 1.58);
    expect(
      limitOf({
        cores: { ...shared, serverIdle: 0.27, redisIdle: 0.12, redisIo: 0.1 },
        machineCores: 2,
      }),
    ).toBe("Redis's main thread (idle 12 % of the window, in I/O 10 %)");
    expect(
      limitOf({
        cores: { ...shared, serverIdle: 0.08, redisIdle: 0.12, redisIo: 0.1 },
        machineCores: 2,
      }),
    ).toBe("the server's main thread (idle 8 % of the window)");
    // A full core still names the process's CPU first; a thread idle a fifth is no limit.
    expect(
      limitOf({ cores: { ...cores(0.9, 0.1, 0.5, 1.5), redisIdle: 0.05 }, machineCores: 2 }),
    ).toBe("server CPU");
    expect(
      limitOf({ cores: { ...shared, serverIdle: 0.2, redisIdle: 0.2 }, machineCores: 2 }),
    ).toBe("waiting (no process near a core)");
    expect(
      limitOf({
        cores: { ...shared, serverIdle: Number.NaN, redisIdle: Number.NaN },
        machineCores: 2,
      }),
    ).toBe("waiting (no process near a core)");
  });

  it("names the AOF fsync for writes near the disk's floor, else waiting", () => {
    const quiet = cores(0.4, 0.2, 0.1, 0.8);
    expect(
      limitOf({ cores: quiet, machineCores: 2, writesPerSecond: 900, diskFloorPerSecond: 1_000 }),
    ).toBe("AOF fsync");
    expect(
      limitOf({ cores: quiet, machineCores: 2, writesPerSecond: 300, diskFloorPerSecond: 1_000 }),
    ).toBe("waiting (no process near a core)");
    expect(limitOf({ cores: quiet, machineCores: 2 })).toBe("waiting (no process near a core)");
  });
});

describe("coresText", () => {
  it("says the window's PSI shares beside the cores where the kernel measured them", () => {
    expect(coresText({ ...cores(0.82, 0.09, 0.38, 1.39), cpuStall: 0.223, ioStall: 0.04 })).toBe(
      "cores: server 0.82, generator 0.09, Redis 0.38, machine 1.39; PSI some: CPU 22 %, I/O 4 %",
    );
    expect(coresText({ ...cores(1, 0.1, 0, 1.2), cpuStall: Number.NaN, ioStall: Number.NaN })).toBe(
      "cores: server 1.00, generator 0.10, Redis 0.00, machine 1.20",
    );
    expect(
      coresText({
        ...cores(0.81, 0.11, 0.52, 1.58),
        cpuStall: 0.2,
        ioStall: 0.07,
        serverIdle: 0.271,
        redisIdle: 0.118,
        redisIo: 0.095,
      }),
    ).toBe(
      "cores: server 0.81, generator 0.11, Redis 0.52, machine 1.58; PSI some: CPU 20 %, I/O 7 %; main threads idle: server 27 %, Redis 12 %; Redis in I/O 10 %",
    );
  });
});
