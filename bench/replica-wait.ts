/**
 * What `REDIS_WAIT_REPLICAS=1` costs against 0: a primary with one replica of its own
 * (both as `npm start` runs its Redis: AOF, `appendfsync always`, the service on the
 * primary's Unix socket), two services on it, one with each setting, and SuggestTask
 * (a fresh session per call) and DismissSuggestion (each slot on a chat of its own,
 * the offer restored straight in Redis between two Dismisses, uncounted) measured in
 * windows of 0, 1, 1, 0, so that the machine's drift within the run weighs on both
 * settings alike. Both settings run with the replica attached: only the WAIT differs.
 */
import { setTimeout as delay } from "node:timers/promises";
import { Redis } from "ioredis";
import { type RedisServerProcess, socketPathIn } from "../server/redis/redis-server-process.js";
import { createRedisClient } from "../server/store/scripts.js";
import { startTestRedis } from "../test/support/store-server.js";
import { builtService, startBenchService } from "./measure.js";
import { ids, inBatches, writers } from "./prepare.js";
import type { Row } from "./report.js";
import { type LoadShape, nodeRow, type RowSpec } from "./rows.js";

/** Fresh sessions prepared for each SuggestTask window (`BENCH_WAIT_SESSIONS`). */
const SESSIONS_PER_WINDOW = Number(process.env.BENCH_WAIT_SESSIONS ?? 50_000);

/** One scenario under both settings: the merged windows of each. */
export interface ReplicaWaitPair {
  readonly scenario: string;
  readonly off: Row;
  readonly on: Row;
}

/** The two scenarios' pairs. */
export interface ReplicaWaitResult {
  readonly pairs: readonly ReplicaWaitPair[];
}

const mean = (a: number, b: number) => (a + b) / 2;

/**
 * Two windows of one setting as one row: calls, errors and CPU summed (server CPU per
 * call weighted by calls), latency percentiles and cores averaged.
 */
export function mergeRows(a: Row, b: Row, scenario: string): Row {
  const calls = a.calls + b.calls;
  const seconds = a.windowSeconds + b.windowSeconds;
  const cores = Object.fromEntries(
    Object.keys(a.cores).map((k) => {
      const key = k as keyof Row["cores"];
      return [key, mean(a.cores[key] ?? Number.NaN, b.cores[key] ?? Number.NaN)];
    }),
  ) as unknown as Row["cores"];
  const firstError = a.firstError ?? b.firstError;
  const notes = [a.note, b.note].filter((n) => n !== undefined);
  return {
    scenario,
    generator: a.generator,
    writes: a.writes,
    calls,
    errors: a.errors + b.errors,
    ...(firstError === undefined ? {} : { firstError }),
    callsPerSecond: calls / seconds,
    p50Ms: mean(a.p50Ms, b.p50Ms),
    p90Ms: mean(a.p90Ms, b.p90Ms),
    p99Ms: mean(a.p99Ms, b.p99Ms),
    windowSeconds: seconds,
    serverCpuUsPerCall:
      (a.serverCpuUsPerCall * a.calls + b.serverCpuUsPerCall * b.calls) / Math.max(1, calls),
    cores,
    ...(notes.length === 0 ? {} : { note: notes.join("; ") }),
  };
}

/** Resolves once the replica is linked to its primary and caught up. */
async function replicaInSync(replica: RedisServerProcess): Promise<void> {
  const r = new Redis(replica.port, "127.0.0.1");
  try {
    for (let i = 0; i < 300; i++) {
      const info = await r.info("replication");
      if (/master_link_status:up/.test(info) && /master_sync_in_progress:0/.test(info)) return;
      await delay(100);
    }
    throw new Error("the replica did not sync with its primary in 30 s");
  } finally {
    r.disconnect();
  }
}

/**
 * Measures both scenarios with `REDIS_WAIT_REPLICAS` 0 and 1 on a primary with one
 * replica, started in `dir` and stopped at the end; `ports` are two free ports for the
 * services.
 */
export async function measureReplicaWait(
  dir: string,
  shape: LoadShape,
  ports: readonly [number, number],
): Promise<ReplicaWaitResult> {
  const started: { stop: () => Promise<void> }[] = [];
  try {
    const primaryDir = `${dir}/primary`;
    const noRewrite = ["--auto-aof-rewrite-percentage", "0"];
    const primary = await startTestRedis({
      dir: primaryDir,
      unixSocket: socketPathIn(primaryDir),
      extraArgs: noRewrite,
    });
    started.push(primary);
    const replica = await startTestRedis({
      dir: `${dir}/replica`,
      extraArgs: [...noRewrite, "--replicaof", "127.0.0.1", String(primary.port)],
    });
    started.push(replica);
    await replicaInSync(replica);

    // The data: fresh sessions for four SuggestTask windows, one chat per slot to dismiss.
    const redis = createRedisClient(primary.url);
    const { putSessions, offerTo } = writers(redis);
    const fresh = ids("wait-fresh", SESSIONS_PER_WINDOW * 4);
    await putSessions(fresh);
    const dismissChats = ids("wait-dismiss", shape.connections * shape.inFlight);
    await inBatches(dismissChats, 64, (sessionId) => offerTo(sessionId, 0, "o0"));
    await redis.quit();

    const entry = builtService();
    const byReplicas = [
      await startBenchService(entry, primary.socketUrl ?? primary.url, ports[0], {
        REDIS_WAIT_REPLICAS: "0",
      }),
      await startBenchService(entry, primary.socketUrl ?? primary.url, ports[1], {
        REDIS_WAIT_REPLICAS: "1",
      }),
    ] as const;
    started.push(...byReplicas);

    const window = (
      replicas: 0 | 1,
      spec: RowSpec,
      config: { scenario: "suggest-task" | "dismiss"; sessions: string[]; runId: string },
    ) =>
      nodeRow(spec, { server: byReplicas[replicas].pid, redis: primary.pid }, shape, {
        address: `127.0.0.1:${ports[replicas]}`,
        pairs: [],
        redisUrl: primary.url,
        ...config,
      });

    const order = [0, 1, 1, 0] as const;
    const pairs: ReplicaWaitPair[] = [];
    const suggest: Row[][] = [[], []];
    for (const [i, replicas] of order.entries()) {
      const sessions = fresh.slice(i * SESSIONS_PER_WINDOW, (i + 1) * SESSIONS_PER_WINDOW);
      const spec = { scenario: "SuggestTask", writes: true };
      console.error(`bench: SuggestTask, REDIS_WAIT_REPLICAS=${replicas}`);
      suggest[replicas]?.push(
        await window(replicas, spec, {
          scenario: "suggest-task",
          sessions,
          runId: `w${replicas}-${i}-${Date.now()}`,
        }),
      );
    }
    const dismiss: Row[][] = [[], []];
    for (const replicas of order) {
      const spec = { scenario: "DismissSuggestion", writes: true };
      console.error(`bench: DismissSuggestion, REDIS_WAIT_REPLICAS=${replicas}`);
      dismiss[replicas]?.push(
        await window(replicas, spec, { scenario: "dismiss", sessions: dismissChats, runId: "" }),
      );
    }
    const where = "primary + 1 replica";
    for (const [scenario, name, rows] of [
      ["SuggestTask", "SuggestTask, fresh session per call, 64 in flight", suggest],
      [
        "DismissSuggestion",
        "DismissSuggestion (its restore made in Redis, uncounted), 64 in flight",
        dismiss,
      ],
    ] as const) {
      const [off, on] = rows.map(([a, b], replicas) =>
        mergeRows(
          a as Row,
          b as Row,
          `${name}, ${where}, \`REDIS_WAIT_REPLICAS=${replicas}\` (2 windows)`,
        ),
      ) as [Row, Row];
      pairs.push({ scenario, off, on });
    }
    return { pairs };
  } finally {
    for (const process of started.reverse()) await process.stop();
  }
}
