import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";

/** A child process whose stdout and stderr are gathered into one text, for a failure's message. */
export interface ChildWithOutput {
  readonly child: ChildProcess;
  /** What the child printed so far, stdout and stderr in the order they arrived. */
  output(): string;
  /** Settles once the child has exited. */
  readonly exited: Promise<void>;
}

/** Spawns `command` with stdin ignored and both of its outputs gathered (`options` as `spawn`'s). */
export function spawnWithOutput(
  command: string,
  args: readonly string[],
  options: Omit<SpawnOptions, "stdio"> = {},
): ChildWithOutput {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const gather = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", gather);
  child.stderr?.on("data", gather);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { child, output: () => output, exited };
}
