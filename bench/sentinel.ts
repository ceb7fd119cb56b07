/**
 * What reaching Redis through Sentinel costs: one primary (as `npm start` runs its Redis:
 * AOF, `appendfsync always`, no AOF rewrite of its own) watched by one sentinel, two
 * services on it, one with `REDIS_URL=redis://` (the primary over TCP) and one with
 * `redis+sentinel://` (the sentinel naming that primary), and SuggestTask (a fresh
 * session per call) measured in windows of direct, Sentinel, Sentinel, direct, so that
 * the machine's drift weighs on both alike. Once connected, the Sentinel client talks to
 * the same primary on one TCP connection: only the way there differs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { Redis } from "ioredis";
import { freePort } from "../server/redis/redis-server-process.js";
import { createRedisClient } from "../server/store/scripts.js";
import { startTestRedis, TEST_REDIS_SERVER } from "../test/support/store-server.js";
import { builtService, startBenchService } from "./measure.js";
import { ids, writers } from "./prepare.js";
import { mergeRows } from "./replica-wait.js";
import type { Row } from "./report.js";
import { type LoadShape, nodeRow } from "./rows.js";

/** Fresh sessions prepared for each SuggestTask window (`BENCH_WAIT_SESSIONS`). */
const SESSIONS_PER_WINDOW = Number(process.env.BENCH_WAIT_SESSIONS ?? 50_000);

/** SuggestTask through Sentinel and direct, each two windows merged. */
export interface SentinelResult {
  readonly direct: Row;
  readonly sentinel: Row;
}

const MASTER = "bench-primary";

/** A sentinel watching the primary on `primaryPort`, ready once it answers. */
async function startSentinel(dir: string, primaryPort: number) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = join(dir, "sentinel.conf");
  writeFileSync(
    conf,
    [
      `port ${port}`,
      "bind 127.0.0.1",
      `dir ${dir}`,
      `sentinel monitor ${MASTER} 127.0.0.1 ${primaryPort} 1`,
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(TEST_REDIS_SERVER, [conf, "--sentinel"], { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => 100 });
  probe.on("error", () => {});
  for (let i = 0; ; i++) {
    const reply = await probe.call("SENTINEL", "get-master-addr-by-name", MASTER).catch(() => null);
    if (Array.isArray(reply)) break;
    if (i > 100) throw new Error("the sentinel did not start");
    await delay(100);
  }
  probe.disconnect();
  return {
    url: `redis+sentinel://127.0.0.1:${port}/${MASTER}`,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * Measures SuggestTask through a sentinel and directly on its primary, started in `dir`
 * and stopped at the end; `ports` are two free ports for the services.
 */
export async function measureSentinel(
  dir: string,
  shape: LoadShape,
  ports: readonly [number, number],
): Promise<SentinelResult> {
  const started: { stop: () => Promise<void> }[] = [];
  try {
    const primary = await startTestRedis({
      dir: join(dir, "primary"),
      extraArgs: ["--auto-aof-rewrite-percentage", "0"],
    });
    started.push(primary);
    const sentinel = await startSentinel(join(dir, "sentinel"), primary.port);
    started.push(sentinel);

    const redis = createRedisClient(primary.url);
    const fresh = ids("sentinel-fresh", SESSIONS_PER_WINDOW * 4);
    await writers(redis).putSessions(fresh);
    await redis.quit();

    const entry = builtService();
    const byWay = [
      await startBenchService(entry, primary.url, ports[0]),
      await startBenchService(entry, sentinel.url, ports[1]),
    ] as const;
    started.push(...byWay);

    const rows: Row[][] = [[], []];
    for (const [i, way] of ([0, 1, 1, 0] as const).entries()) {
      console.error(`bench: SuggestTask, ${way === 0 ? "direct" : "through Sentinel"}`);
      rows[way]?.push(
        await nodeRow(
          { scenario: "SuggestTask", writes: true },
          { server: byWay[way].pid, redis: primary.pid },
          shape,
          {
            address: `127.0.0.1:${ports[way]}`,
            pairs: [],
            redisUrl: primary.url,
            scenario: "suggest-task",
            sessions: fresh.slice(i * SESSIONS_PER_WINDOW, (i + 1) * SESSIONS_PER_WINDOW),
            runId: `s${way}-${i}-${Date.now()}`,
          },
        ),
      );
    }
    const name = "SuggestTask, fresh session per call, 64 in flight, primary over TCP";
    const [direct, viaSentinel] = rows.map(([a, b], way) =>
      mergeRows(
        a as Row,
        b as Row,
        `${name}, ${way === 0 ? "`redis://`" : "`redis+sentinel://`"} (2 windows)`,
      ),
    ) as [Row, Row];
    return { direct, sentinel: viaSentinel };
  } finally {
    for (const process of started.reverse()) await process.stop();
  }
}
