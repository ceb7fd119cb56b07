/** Reading processes from /proc: CPU time and memory, for the benchmark's figures. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** The fields of a /proc stat line after the command's name (in parentheses, which it may hold). */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** User plus system CPU seconds a process has used so far. */
export function cpuSeconds(pid: number): number {
  const fields = statFields(readFileSync(`/proc/${pid}/stat`, "utf8"));
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** How a sampled thread spent its time: on a core or waiting for one, in I/O, idle. */
export type ThreadTime = "run" | "io" | "idle";

/**
 * What a process's main thread is doing now, from its scheduler state: `R` on a core or
 * waiting for one, `D` in I/O (Redis's fsync), anything else idle (`S`: an event loop
 * waiting in epoll). Undefined once the process is gone.
 */
export function threadTime(pid: number): ThreadTime | undefined {
  try {
    const state = statFields(readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8"))[0];
    return state === "R" ? "run" : state === "D" ? "io" : "idle";
  } catch {
    return undefined;
  }
}

/**
 * The main threads of the watched processes, sampled every `everyMs` while a generator
 * runs: seconds spent in each of `ThreadTime`'s states so far, by `<state>:<name>`. A
 * thread seldom idle is what a window waited on even when no process used a full core:
 * Redis with `appendfsync always` spends part of each batch in its fsync, off the CPU.
 */
export class ThreadTimes {
  readonly #pids: Readonly<Record<string, number>>;
  readonly #seconds: Record<string, number> = {};
  readonly #timer: NodeJS.Timeout;
  #last = performance.now();

  constructor(pids: Readonly<Record<string, number>>, everyMs = 5) {
    this.#pids = pids;
    // Every key from the start, so that a state first seen within a window reads 0 before.
    for (const name of Object.keys(pids)) {
      for (const time of ["run", "io", "idle"]) this.#seconds[`${time}:${name}`] = 0;
    }
    this.#timer = setInterval(() => this.#sample(), everyMs);
  }

  #sample(): void {
    const now = performance.now();
    const seconds = (now - this.#last) / 1_000;
    this.#last = now;
    for (const [name, pid] of Object.entries(this.#pids)) {
      const time = threadTime(pid);
      if (time === undefined) continue;
      const key = `${time}:${name}`;
      this.#seconds[key] = (this.#seconds[key] ?? 0) + seconds;
    }
  }

  /** The seconds so far, by `<state>:<name>`. */
  totals(): Readonly<Record<string, number>> {
    return { ...this.#seconds };
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/**
 * CPU seconds every core of the machine has been busy so far (all of /proc/stat's
 * first line but idle and iowait): on a shared machine, other processes' work too.
 */
export function machineBusySeconds(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
  const [user, nice, system, , , irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = [user, nice, system, irq, softirq, steal].reduce<number>((a, b) => a + (b ?? 0), 0);
  return busy / TICKS_PER_SECOND;
}

/**
 * The "some" stall seconds so far of Linux's pressure stall information
 * (/proc/pressure) for CPU (tasks waiting for a core) or I/O (an fsync, for instance):
 * machine-wide, averaged over the cores; NaN where the kernel has none.
 */
export function stallSeconds(kind: "cpu" | "io"): number {
  try {
    const text = readFileSync(`/proc/pressure/${kind}`, "utf8");
    return Number(/^some .*total=(\d+)/m.exec(text)?.[1] ?? Number.NaN) / 1e6;
  } catch {
    return Number.NaN;
  }
}

/** Resident memory of a process, in MB. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/**
 * The service as `npm start` runs it: `root`'s server compiled by tsc (`npm run
 * build:server`), so that the bench measures the JavaScript users run, not tsx's
 * transpilation of it (which wraps every closure in a naming helper). Answers the
 * compiled entry point's path.
 */
export function builtService(root = "."): string {
  execFileSync("npm", ["run", "--silent", "build:server"], { cwd: root, stdio: "inherit" });
  return resolve(root, "dist/server/main.js");
}

/**
 * A child process running `args` with node, resolved once it prints `ready`; a
 * TypeScript entry point runs through tsx (`node --import tsx`). With `wrapper`, node
 * runs under that command (`valgrind --tool=callgrind ...`, bench/instructions.ts).
 */
export async function startNode(
  args: readonly string[],
  env: Record<string, string | undefined>,
  ready: RegExp,
  wrapper: readonly string[] = [],
): Promise<{ child: ChildProcess; pid: number; stop: () => Promise<void> }> {
  const typescript = args.some((a) => a.endsWith(".ts"));
  const command = [process.execPath, ...(typescript ? ["--import", "tsx"] : []), ...args];
  const [file, ...rest] = [...wrapper, ...command] as [string, ...string[]];
  const child = spawn(file, rest, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = "";
    const watch = (chunk: Buffer) => {
      out += chunk.toString();
      if (!ready.test(out)) return;
      // From here on its output (the service's call log) is read and dropped: a
      // listener left here would keep the whole log and test it again on every chunk,
      // taking most of a core from the service it measures.
      child.stdout?.off("data", watch);
      child.stdout?.resume();
      resolve();
    };
    child.stdout?.on("data", watch);
    void exited.then(() => reject(new Error(`${args.join(" ")} exited:\n${out}`)));
  });
  return {
    child,
    pid: child.pid ?? 0,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * The compiled service `entry` on `redisUrl` at `port`, as the A/B benches run it: the
 * fast path and call log as `BENCH_GRPC_FAST_PATH` and `BENCH_LOG_LEVEL` say, plus `env`;
 * resolved once it listens.
 */
export function startBenchService(
  entry: string,
  redisUrl: string,
  port: number,
  env: Record<string, string> = {},
): ReturnType<typeof startNode> {
  return startNode(
    [entry],
    {
      PORT: String(port),
      REDIS_URL: redisUrl,
      GRPC_FAST_PATH: process.env.BENCH_GRPC_FAST_PATH ?? "1",
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
      ...env,
    },
    /listening on/,
  );
}

/** CPU seconds of each watched process at one moment, and when (performance.now(), ms). */
export interface CpuSample {
  readonly at: number;
  readonly cpu: Readonly<Record<string, number>>;
}

/**
 * Reads the CPU seconds of every named process now, of the whole machine as `machine`,
 * and the machine's stall seconds as `stall:cpu` and `stall:io`, with `threads` (a
 * `ThreadTimes`' totals so far); a process gone reads as NaN.
 */
export function sampleCpu(
  pids: Readonly<Record<string, number>>,
  threads: Readonly<Record<string, number>> = {},
): CpuSample {
  const cpu: Record<string, number> = {
    machine: machineBusySeconds(),
    "stall:cpu": stallSeconds("cpu"),
    "stall:io": stallSeconds("io"),
    ...threads,
  };
  for (const [name, pid] of Object.entries(pids)) {
    try {
      cpu[name] = cpuSeconds(pid);
    } catch {
      cpu[name] = Number.NaN;
    }
  }
  return { at: performance.now(), cpu };
}

/** What a measured stretch cost each process: CPU seconds and the share of one core. */
export interface WindowCpu {
  readonly seconds: number;
  readonly cpuSeconds: Readonly<Record<string, number>>;
  readonly cores: Readonly<Record<string, number>>;
}

/** The CPU each process used between two samples. */
export function windowCpu(start: CpuSample, end: CpuSample): WindowCpu {
  const seconds = (end.at - start.at) / 1_000;
  const cpuSeconds: Record<string, number> = {};
  const cores: Record<string, number> = {};
  for (const name of Object.keys(start.cpu)) {
    const used = (end.cpu[name] ?? Number.NaN) - (start.cpu[name] ?? Number.NaN);
    cpuSeconds[name] = used;
    cores[name] = used / seconds;
  }
  return { seconds, cpuSeconds, cores };
}

/**
 * Runs a load generator to its end and samples the CPU of the named processes, and of
 * the generator itself (as `generator`), the moment it prints a line matching one of
 * `marks` (e.g. the opening and closing of its measured window). Answers its standard
 * output and the samples by mark name; rejects when it exits with a failure. `atMark`
 * is called with each mark's name right after its sample (to read more at that moment).
 */
export async function runMeasured(
  command: string,
  args: readonly string[],
  pids: Readonly<Record<string, number>>,
  marks: Readonly<Record<string, RegExp>>,
  atMark?: (name: string) => void,
): Promise<{ stdout: string; samples: Map<string, CpuSample> }> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
  const watched = { ...pids, generator: child.pid ?? 0 };
  const threads = new ThreadTimes(pids);
  const samples = new Map<string, CpuSample>();
  let stdout = "";
  let partial = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    partial += chunk.toString();
    let nl = partial.indexOf("\n");
    while (nl >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      for (const [name, re] of Object.entries(marks)) {
        if (!re.test(line)) continue;
        samples.set(name, sampleCpu(watched, threads.totals()));
        atMark?.(name);
      }
      nl = partial.indexOf("\n");
    }
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (c) => resolve(c));
  }).finally(() => threads.stop());
  if (code !== 0) {
    throw new Error(
      `${command} ${args.join(" ").slice(0, 200)} exited ${code}:\n${stdout.slice(-2_000)}`,
    );
  }
  return { stdout, samples };
}

/** The last line of a generator's output that is a JSON object, parsed. */
export function lastJsonLine<T>(stdout: string): T {
  const line = stdout
    .trim()
    .split("\n")
    .reverse()
    .find((l) => l.startsWith("{"));
  if (line === undefined) throw new Error(`no JSON result in:\n${stdout.slice(-2_000)}`);
  return JSON.parse(line) as T;
}
