/**
 * The disk's floor for writes: `redis-benchmark` (Debian `redis-tools`, installed with
 * `redis-server`) running an `XADD` against a private redis-server with
 * `appendonly yes` and `appendfsync always`, as `npm start` runs Redis, at the bench's
 * concurrency (64 clients) and at 1. No Node process is in the way, so this is what
 * fsync'd appends cost on this disk, beside which the service's writes/s are read.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { startTestRedis } from "../test/support/store-server.js";

const run = promisify(execFile);

/** One redis-benchmark measurement. */
export interface RedisBenchmarkFigure {
  readonly clients: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/**
 * Reads `redis-benchmark --csv` output: a header line, then one quoted line per test
 * (`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...`).
 */
export function parseRedisBenchmarkCsv(csv: string): { rps: number; p50Ms: number; p99Ms: number } {
  const lines = csv
    .trim()
    .split("\n")
    .map((l) => l.split('","').map((cell) => cell.replace(/^"|"$/g, "")));
  const header = lines[0];
  const values = lines[1];
  if (header?.[0] !== "test" || values === undefined) {
    throw new Error(`redis-benchmark printed no CSV result:\n${csv.slice(-1_000)}`);
  }
  const field = (name: string) => {
    const i = header.indexOf(name);
    const v = Number(values[i]);
    if (i < 0 || !Number.isFinite(v)) throw new Error(`redis-benchmark CSV lacks ${name}`);
    return v;
  };
  return { rps: field("rps"), p50Ms: field("p50_latency_ms"), p99Ms: field("p99_latency_ms") };
}

/** XADDs at `clients` connections, `requests` in all. */
async function xaddBenchmark(
  port: number,
  clients: number,
  requests: number,
): Promise<RedisBenchmarkFigure> {
  const { stdout } = await run(
    "redis-benchmark",
    ["-p", String(port), "-c", String(clients), "-n", String(requests), "--csv"].concat([
      "XADD",
      "bench:floor",
      "*",
      "field",
      "value",
    ]),
    { timeout: 60_000 },
  );
  const figure = parseRedisBenchmarkCsv(stdout);
  return { clients, requestsPerSecond: figure.rps, p50Ms: figure.p50Ms, p99Ms: figure.p99Ms };
}

/** The floor at 64 clients and at 1, on a redis-server of its own in `dir`. */
export async function measureDiskFloor(
  dir: string,
): Promise<{ at64: RedisBenchmarkFigure; at1: RedisBenchmarkFigure }> {
  const redis = await startTestRedis({ dir: join(dir, "floor") });
  try {
    // Small counts: well under a second each on a quiet disk, a few on a busy one.
    const at64 = await xaddBenchmark(redis.port, 64, 30_000);
    const at1 = await xaddBenchmark(redis.port, 1, 2_000);
    return { at64, at1 };
  } finally {
    await redis.stop();
  }
}
