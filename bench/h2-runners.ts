/** The load runners of bench/h2-rows.ts: h2load, and lean loops of framed calls (h2-frames.ts). */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { FramedGrpcConnection } from "./h2-frames.js";
import { cpuSeconds } from "./measure.js";

const run = promisify(execFile);
export const WARMUP_S = 2;
export const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 6);

/** One h2load run: calls/s and server CPU µs per call over the window. */
export async function h2load(port: number, path: string, body: Buffer, pid: number) {
  const dir = mkdtempSync(join(tmpdir(), "h2rows-"));
  const file = join(dir, "body");
  writeFileSync(file, body);
  let before = 0;
  const timer = setTimeout(() => {
    before = cpuSeconds(pid);
  }, WARMUP_S * 1000);
  let stdout: string;
  let after: number;
  try {
    ({ stdout } = await run("h2load", [
      ...["-c", "4", "-m", "16", "--warm-up-time", String(WARMUP_S), "-D", String(WINDOW_S)],
      ...["-d", file, "-H", "content-type: application/grpc", "-H", "te: trailers"],
      `http://127.0.0.1:${port}${path}`,
    ]));
    after = cpuSeconds(pid);
  } finally {
    clearTimeout(timer);
    rmSync(dir, { recursive: true, force: true });
  }
  const done = Number(/(\d+) succeeded/.exec(stdout)?.[1] ?? 0);
  return { callsPerSecond: done / WINDOW_S, cpuUs: ((after - before) / done) * 1e6 };
}

/** One unary gRPC call; rejects unless its status is OK. */
async function call(c: FramedGrpcConnection, path: string, body: Buffer): Promise<void> {
  const answer = await c.call(path, body);
  if (answer.status !== 0) throw new Error(answer.error);
}

/** 64 loops, each running its own sequence of calls in order, for the window. */
export async function sequences(
  port: number,
  steps: (slot: number) => [string, Buffer][],
  pid: number,
) {
  const sessions = await FramedGrpcConnection.connectAll(`127.0.0.1:${port}`, 4);
  let counting = false;
  let stop = false;
  // The first call that fails stops every loop and fails the run, once the window is over
  // (handled at once: a loop's rejection is never left unhandled until then).
  let failure: { readonly error: unknown } | undefined;
  const counts = new Map<string, number>();
  const loops = Array.from({ length: 64 }, async (_, slot) => {
    const seq = steps(slot);
    const s = sessions[slot % 4] as FramedGrpcConnection;
    while (!stop) {
      for (const [path, body] of seq) {
        await call(s, path, body);
        if (counting) counts.set(path, (counts.get(path) ?? 0) + 1);
      }
    }
  }).map((loop) =>
    loop.catch((error: unknown) => {
      failure ??= { error };
      stop = true;
    }),
  );
  await new Promise((r) => setTimeout(r, WARMUP_S * 1000));
  const before = cpuSeconds(pid);
  counting = true;
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  counting = false;
  const cpu = cpuSeconds(pid) - before;
  stop = true;
  await Promise.all(loops);
  for (const s of sessions) s.close();
  if (failure !== undefined) throw failure.error;
  const calls = [...counts.values()].reduce((a, b) => a + b, 0);
  return { calls, cpuUs: (cpu / calls) * 1e6 };
}

/** 64 loops, each through its own list of calls once: CPU µs per call over the whole run. */
export async function once(port: number, lists: [string, Buffer][][], pid: number) {
  const sessions = await FramedGrpcConnection.connectAll(`127.0.0.1:${port}`, 4);
  const before = cpuSeconds(pid);
  const began = performance.now();
  let calls = 0;
  await Promise.all(
    lists.map(async (list, slot) => {
      for (const [path, body] of list) {
        await call(sessions[slot % 4] as FramedGrpcConnection, path, body);
        calls++;
      }
    }),
  );
  const cpu = cpuSeconds(pid) - before;
  const seconds = (performance.now() - began) / 1000;
  for (const s of sessions) s.close();
  return { calls, callsPerSecond: calls / seconds, cpuUs: (cpu / calls) * 1e6 };
}

/** h2load sending `n` copies of one call at once on one connection: ms until all answered. */
export async function h2loadBurst(port: number, path: string, body: Buffer, n: number) {
  const dir = mkdtempSync(join(tmpdir(), "h2burst-"));
  const file = join(dir, "body");
  writeFileSync(file, body);
  let stdout: string;
  try {
    ({ stdout } = await run("h2load", [
      ...["-n", String(n), "-c", "1", "-m", String(n), "-d", file],
      ...["-H", "content-type: application/grpc", "-H", "te: trailers"],
      `http://127.0.0.1:${port}${path}`,
    ]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const [, value, unit] = /finished in ([\d.]+)(ms|s|us)/.exec(stdout) ?? [];
  const scale = unit === "s" ? 1000 : unit === "us" ? 0.001 : 1;
  return Number(value) * scale;
}
