/** Reading processes from /proc: CPU time and memory, for the benchmark's figures. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** User plus system CPU seconds a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Resident memory of a process, in MB. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** A child process started with `node --import tsx`, resolved once it prints `ready`. */
export async function startNode(
  args: readonly string[],
  env: Record<string, string | undefined>,
  ready: RegExp,
): Promise<{ child: ChildProcess; pid: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (ready.test(out)) resolve();
    });
    void exited.then(() => reject(new Error(`${args.join(" ")} exited:\n${out}`)));
  });
  // From here on its output (the service's call log) is read and dropped.
  child.stdout?.resume();
  return {
    child,
    pid: child.pid ?? 0,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
