/**
 * What heartbeats cost 10,000 idle watchers: the same watchers twice, each time on a fresh
 * instance of the service (so that neither inherits the other's heap), once without
 * heartbeats and once with them every `BENCH_HEARTBEAT_SECONDS` (15, the SDK's default).
 * Over one window of `BENCH_HEARTBEAT_WINDOW_MS` (30 s: two heartbeats per watcher at 15 s)
 * the server's CPU is read from /proc, and its resident memory at the window's end, with
 * every stream still open.
 */
import { freePort } from "../server/redis/redis-server-process.js";
import type { HeartbeatLoadConfig, HeartbeatLoadResult } from "./heartbeat-load.js";
import { lastJsonLine, rssMb, runMeasured, startNode, windowCpu } from "./measure.js";

const WATCHERS = Number(process.env.BENCH_WATCHERS ?? 10_000);
const HEARTBEAT_SECONDS = Number(process.env.BENCH_HEARTBEAT_SECONDS ?? 15);
const WINDOW_MS = Number(process.env.BENCH_HEARTBEAT_WINDOW_MS ?? 30_000);

/** One instance's window: its CPU, its memory, and what the watchers got. */
export interface HeartbeatPhase extends HeartbeatLoadResult {
  readonly serverCpuSeconds: number;
  readonly serverCores: number;
  readonly windowSeconds: number;
  readonly serverRssMb: number;
}

/** Both windows: without heartbeats, then with them. */
export interface HeartbeatFigures {
  readonly without: HeartbeatPhase;
  readonly with: HeartbeatPhase;
}

/** Runs bench/heartbeat-load.ts against a fresh instance of `entry` (the built service). */
async function phase(
  entry: string,
  redisUrl: string,
  sessions: readonly string[],
  heartbeatSeconds: number,
): Promise<HeartbeatPhase> {
  const port = await freePort();
  const server = await startNode(
    [entry],
    { PORT: String(port), REDIS_URL: redisUrl, LOG_LEVEL: "warn" },
    /listening on/,
  );
  try {
    const config: HeartbeatLoadConfig = {
      address: `127.0.0.1:${port}`,
      watchers: WATCHERS,
      sessions,
      heartbeatSeconds,
      windowMs: WINDOW_MS,
    };
    let serverRssMb = Number.NaN;
    const { stdout, samples } = await runMeasured(
      process.execPath,
      ["--import", "tsx", "bench/heartbeat-load.ts", JSON.stringify(config)],
      { server: server.pid },
      { start: /^window-start$/, end: /^window-end$/ },
      // Memory read with every stream still open.
      (mark) => {
        if (mark === "end") serverRssMb = rssMb(server.pid);
      },
    );
    const start = samples.get("start");
    const end = samples.get("end");
    if (start === undefined || end === undefined) {
      throw new Error(`heartbeat-load printed no window:\n${stdout.slice(-2_000)}`);
    }
    const result = lastJsonLine<HeartbeatLoadResult>(stdout);
    const cpu = windowCpu(start, end);
    return {
      ...result,
      serverCpuSeconds: cpu.cpuSeconds.server ?? Number.NaN,
      serverCores: cpu.cores.server ?? Number.NaN,
      windowSeconds: cpu.seconds,
      serverRssMb,
    };
  } finally {
    await server.stop();
  }
}

/** The two windows, each on an instance of its own. */
export async function measureHeartbeats(
  entry: string,
  redisUrl: string,
  sessions: readonly string[],
): Promise<HeartbeatFigures> {
  const without = await phase(entry, redisUrl, sessions, 0);
  const withBeats = await phase(entry, redisUrl, sessions, HEARTBEAT_SECONDS);
  return { without, with: withBeats };
}
