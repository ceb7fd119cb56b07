/**
 * `npm run bench`: the service measured the way its users load it, every figure of
 * server CPU per call read as a ratio to a grpc-js noop measured in the same run with
 * the same h2load settings, first and last (machines here are shared and noisy; absolute times vary
 * from run to run). Writes bench/results/latest.md and latest.json and prints the
 * Markdown. `BENCH_ONLY=<regex>` measures only the scenarios whose names match (the
 * noop, the unit of every ratio, always runs); `BENCH_PROFILE_DIR=<dir>` has the service
 * write a CPU profile (`node --cpu-prof`) there; `BENCH_LOG_LEVEL=warn` measures it
 * without its call log (one JSON line per call, on by default as in production).
 * `BENCH_CLUSTER=1` adds the change notices on Redis Clusters of 3 and 9 primaries
 * (bench/cluster-notices.ts: about 3 minutes more, twelve redis-servers at once), off
 * by default. `npm run bench -- --help` prints this.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import { HealthCheckRequestSchema } from "../gen/grpc/health/v1/health_pb.js";
import {
  GetSuggestionRequestSchema,
  ListSuggestionsRequestSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { freePort, socketPathIn, startRedisServer } from "../server/redis/redis-server-process.js";
import { measureAuthCost } from "./auth-cost.js";
import { measureClusterNotices } from "./cluster-notices.js";
import { measureFanout, measureStartConcurrency } from "./extras.js";
import { H2LOAD_MISSING, h2loadVersion } from "./h2load.js";
import { measureHeartbeats } from "./heartbeats.js";
import { runHistoryBench } from "./history.js";
import type { LoadConfig } from "./load.js";
import { measureMcpCost } from "./mcp-cost.js";
import { builtService, startNode } from "./measure.js";
import { prepare } from "./prepare.js";
import { measureDiskFloor } from "./redis-floor.js";
import { measureReplicaWait } from "./replica-wait.js";
import type { Row } from "./report.js";
import { writeReport } from "./report.js";
import { measureRetryLayer } from "./retry-layer.js";
import { h2loadRow, type LoadShape, nodeRow, type RowSpec, type Watched } from "./rows.js";
import { measureSentinel } from "./sentinel.js";
import { type Extra, extraRowsOf } from "./summary.js";
import { measureTracingOff } from "./tracing-off.js";
import { measureWatchers } from "./watchers.js";
import { measureWorkspaceInbox } from "./workspace-inbox.js";

const SHAPE: LoadShape = {
  connections: 4,
  inFlight: 16,
  warmupMs: Number(process.env.BENCH_WARMUP_MS ?? 2_000),
  windowMs: Number(process.env.BENCH_WINDOW_MS ?? 8_000),
};
const ONLY = new RegExp(process.env.BENCH_ONLY ?? ".", "i");
const CLUSTER = process.env.BENCH_CLUSTER === "1";

const HELP = `npm run bench: the service under load, every server CPU figure a ratio to a grpc-js
noop of the same run; writes bench/results/latest.md and latest.json.

  BENCH_ONLY=<regex>        only the steps whose names match (the noop always runs)
  BENCH_WARMUP_MS, BENCH_WINDOW_MS   each load window's warm-up and length (2000, 8000)
  BENCH_GRPC_FAST_PATH=0    the service on connect-node alone
  BENCH_LOG_LEVEL=warn      the service without its call log
  BENCH_PROFILE_DIR=<dir>   the service writes a CPU profile there
  BENCH_WAIT_SESSIONS=<n>   fresh sessions per SuggestTask window of the REDIS_WAIT_REPLICAS
                            step (50000)
  BENCH_CLUSTER=1           also the change notices on Redis Clusters of 3 and 9 primaries
                            (bench/cluster-notices.ts; off by default: about 3 minutes
                            more, twelve redis-servers at once)`;
const SERVICE = "/oda.suggest.v1.SuggestionService";
const HEALTH = "/grpc.health.v1.Health/Check";

/** Runs `step` when `name` is selected, logging it; answers undefined otherwise. */
async function step<T>(name: string, fn: () => Promise<T>, always = false): Promise<T | undefined> {
  if (!always && !ONLY.test(name)) return undefined;
  console.error(`bench: ${name}`);
  const began = performance.now();
  const result = await fn();
  console.error(`bench: ${name}: ${((performance.now() - began) / 1_000).toFixed(1)} s`);
  return result;
}

/** The grpc-js noop under h2load: the unit of every ratio. */
async function noopRow(redisPid: number, when: string): Promise<Row> {
  const port = await freePort();
  const server = await startNode(["bench/noop-server.ts", "grpc-js", String(port)], {}, /ready/);
  try {
    console.error(`bench: grpc-js noop (Health/Check), ${when}`);
    return await h2loadRow(
      { scenario: `grpc-js noop (\`bench/noop-server.ts grpc-js\`), ${when}`, writes: false },
      `127.0.0.1:${port}`,
      { server: server.pid, redis: redisPid },
      SHAPE,
      { path: HEALTH, schema: HealthCheckRequestSchema, init: {} },
    );
  } finally {
    await server.stop();
  }
}

type Data = Awaited<ReturnType<typeof prepare>>;

/** What a scenario runs with. */
interface Ctx {
  readonly data: Data;
  readonly redisUrl: string;
  /** An h2load window of one request to a method of the SuggestionService. */
  read<Desc extends DescMessage>(
    spec: RowSpec,
    method: string,
    schema: Desc,
    init: MessageInitShape<Desc>,
  ): Promise<Row>;
  /** A window of the lean generator. */
  load(spec: RowSpec, config: Omit<LoadConfig, keyof LoadShape | "address">): Promise<Row>;
  /** An h2load window of the service's Health/Check. */
  health(spec: RowSpec): Promise<Row>;
}

const none = { sessions: [], pairs: [], runId: "" };

/** Every load window against the service, in the order the report lists them. */
const SCENARIOS: readonly [string, (ctx: Ctx) => Promise<Row>][] = [
  [
    "Health/Check on the service's fast path",
    (c) => c.health({ scenario: "the service's Health/Check", writes: false }),
  ],
  [
    "GetSuggestion",
    (c) =>
      c.read(
        { scenario: "GetSuggestion (chat of 3 open + 7 settled)", writes: false, target: 1.5 },
        "GetSuggestion",
        GetSuggestionRequestSchema,
        { sessionId: c.data.readChat, suggestionId: "o9" },
      ),
  ],
  [
    "ListSuggestions, chat unchanged",
    (c) =>
      c.read(
        {
          scenario: "ListSuggestions, chat unchanged since the last read",
          writes: false,
          target: 1.5,
        },
        "ListSuggestions",
        ListSuggestionsRequestSchema,
        { sessionId: c.data.readChat },
      ),
  ],
  [
    "ListSuggestions right after a change",
    (c) =>
      c.load(
        {
          scenario: "ListSuggestions right after a change (made by another instance)",
          writes: false,
          target: 2.5,
        },
        {
          ...none,
          scenario: "list-after-change",
          sessions: c.data.changeChats,
          redisUrl: c.redisUrl,
        },
      ),
  ],
  [
    "SuggestTask, fresh session per call",
    (c) =>
      c.load(
        {
          scenario: "SuggestTask, fresh session per call, 64 in flight",
          writes: true,
          target: 2.0,
        },
        {
          ...none,
          scenario: "suggest-task",
          sessions: c.data.freshSessions,
          runId: `r${Date.now()}`,
        },
      ),
  ],
  [
    "Dismiss / Restore / Draft",
    (c) =>
      c.load(
        { scenario: "Dismiss / Restore / Draft, in turn", writes: true, target: 2.0 },
        { ...none, scenario: "settle", sessions: c.data.settleChats },
      ),
  ],
  [
    "StartSuggestion, embedded host",
    (c) =>
      c.load(
        { scenario: "StartSuggestion, embedded host", writes: true, target: 4.0 },
        { ...none, scenario: "start", pairs: c.data.startPairs },
      ),
  ],
];

/** The selected scenarios against the service at `address`. */
async function serviceRows(address: string, watched: Watched, data: Data, redisUrl: string) {
  const ctx: Ctx = {
    data,
    redisUrl,
    read: (spec, method, schema, init) =>
      h2loadRow(spec, address, watched, SHAPE, { path: `${SERVICE}/${method}`, schema, init }),
    load: (spec, config) => nodeRow(spec, watched, SHAPE, { address, ...config }),
    health: (spec) =>
      h2loadRow(spec, address, watched, SHAPE, {
        path: HEALTH,
        schema: HealthCheckRequestSchema,
        init: {},
      }),
  };
  const rows: Row[] = [];
  for (const [name, run] of SCENARIOS) {
    const row = await step(name, () => run(ctx));
    if (row !== undefined) rows.push(row);
  }
  return rows;
}

/** The service on `redis`: its load windows, then the figures measured beside them. */
async function measureService(
  redis: { url: string; socketUrl: string | undefined; pid: number },
  data: Data,
  extra: Extra,
  started: { stop: () => Promise<void> }[],
): Promise<Row[]> {
  const port = await freePort();
  // BENCH_PROFILE_DIR: the service writes a CPU profile there (node --cpu-prof) at exit.
  const profile = process.env.BENCH_PROFILE_DIR;
  const entry = builtService();
  const server = await startNode(
    [...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : []), entry],
    {
      PORT: String(port),
      REDIS_URL: redis.socketUrl ?? redis.url,
      GRPC_FAST_PATH: process.env.BENCH_GRPC_FAST_PATH ?? "1",
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
    },
    /listening on/,
  );
  started.push(server);
  const address = `127.0.0.1:${port}`;
  const watched = { server: server.pid, redis: redis.pid };
  const rows = await serviceRows(address, watched, data, redis.url);
  extra.startConcurrency = await step("50 concurrent Starts of one suggestion", () =>
    measureStartConcurrency(address, watched, data.concurrencyPairs),
  );
  extra.fanout = await step("a change reaching 1,000 watchers of one chat", () =>
    measureFanout(address, watched, redis.url, data.fanoutChat, 1_000, 50),
  );
  extra.watchers = await step("10,000 idle watchers", () =>
    measureWatchers(address, server.pid, redis.url, data.watchSessions, data.watchOfferSessions),
  );
  extra.retryLayer = await step(
    "a unary call through the SDK's retry layer against one without",
    () => measureRetryLayer(address, data.readChat),
  );
  extra.workspaceInbox = await step(
    "a workspace inbox of 10,000 chats and 3,000 open suggestions",
    () => measureWorkspaceInbox(address, server.pid, redis.url),
  );
  await server.stop();
  extra.heartbeats = await step("10,000 idle watchers with heartbeats against without", () =>
    measureHeartbeats(entry, redis.socketUrl ?? redis.url, data.watchSessions),
  );
  // Whenever the watchers' line is measured, its floor is too.
  extra.fanoutFloor = await step(
    "the same change on node:http2 alone (the fan-out's floor)",
    () => measureFanoutFloor(redis, data.fanoutChat),
    extra.fanout !== undefined,
  );
  return rows;
}

/** The 1,000 watchers' run against bench/fanout-floor.ts, the service stopped. */
async function measureFanoutFloor(redis: { url: string; pid: number }, sessionId: string) {
  const port = await freePort();
  const config = { port, redisUrl: redis.url, sessionId };
  const floor = await startNode(
    ["bench/fanout-floor.ts", JSON.stringify(config)],
    {},
    /listening on/,
  );
  try {
    const watched = { server: floor.pid, redis: redis.pid };
    return await measureFanout(`127.0.0.1:${port}`, watched, redis.url, sessionId, 1_000, 50);
  } finally {
    await floor.stop();
  }
}

/** The mean server CPU per call of the noop rows: the unit of every ratio. */
function meanNoop(rows: readonly Row[]): number {
  const noops = rows.filter((r) => r.scenario.startsWith("grpc-js noop"));
  return noops.reduce((sum, r) => sum + r.serverCpuUsPerCall, 0) / noops.length;
}

async function main(): Promise<void> {
  if (process.argv.includes("--help")) {
    console.log(HELP);
    return;
  }
  const began = Date.now();
  const version = h2loadVersion();
  if (version === undefined) {
    console.error(H2LOAD_MISSING);
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-bench-"));
  const extra: Extra = { h2load: version };
  const rows: Row[] = [];
  // Every process started, stopped in the end even when a step fails.
  const started: { stop: () => Promise<void> }[] = [];
  try {
    extra.diskFloor = await step("disk floor (redis-benchmark XADD)", () => measureDiskFloor(dir));
    // As `npm start` runs it: the service on its Unix socket (server/main.ts), the
    // bench's own clients on TCP.
    const redisDir = join(dir, "redis");
    // As npm start runs it (AOF, appendfsync always), but without rewriting its AOF on
    // its own: a rewrite forks Redis, and on two cores the fork's copying and writing take
    // turns with the service. The rows' writes set off two or three inside the windows of
    // a run (two in SuggestTask's, once), each costing the row it fell in; the AOF grows
    // by a few hundred MB a run instead.
    const redis = await startRedisServer({
      dir: redisDir,
      unixSocket: socketPathIn(redisDir),
      extraArgs: ["--auto-aof-rewrite-percentage", "0"],
    });
    started.push(redis);
    const data = (await step("preparing data", () => prepare(redis.url), true)) as Data;
    rows.push(await noopRow(redis.pid, "first"));
    rows.push(...(await measureService(redis, data, extra, started)));
    extra.authCost = await step("GetSuggestion with a JWT against a static token", () =>
      measureAuthCost(redis, data.readChat, SHAPE),
    );
    rows.push(...(extra.authCost?.rows ?? []));
    extra.mcpCost = await step("suggest_task over MCP against SuggestTask over Connect JSON", () =>
      measureMcpCost(redis),
    );
    extra.replicaWait = await step(
      "REDIS_WAIT_REPLICAS=1 against 0, primary + 1 replica",
      async () => {
        const result = await measureReplicaWait(join(dir, "replica-wait"), SHAPE, [
          await freePort(),
          await freePort(),
        ]);
        rows.push(...result.pairs.flatMap((p) => [p.off, p.on]));
        return result;
      },
    );
    extra.sentinel = await step(
      "SuggestTask through Sentinel against the primary direct",
      async () => {
        const result = await measureSentinel(join(dir, "sentinel"), SHAPE, [
          await freePort(),
          await freePort(),
        ]);
        rows.push(result.direct, result.sentinel);
        return result;
      },
    );
    if (CLUSTER) {
      extra.clusterNotices = await step("change notices on 3 and 9 primaries", () =>
        measureClusterNotices(),
      );
    }
    extra.history = await step("a chat of 10,000 records against a fresh one", () =>
      runHistoryBench(redis.url),
    );
    extra.tracingOff = await step("tracing off against no tracing calls", () =>
      measureTracingOff(),
    );
    // Measured again at the end: the machine drifts; the ratios use the mean of both.
    rows.push(await noopRow(redis.pid, "last"));
  } finally {
    for (const process of started.reverse()) await process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const floor = extra.diskFloor?.at64.requestsPerSecond;
  writeReport({
    machine: `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${version}`,
    machineCores: cpus().length,
    settings: `${SHAPE.connections} connections × ${SHAPE.inFlight} streams, ${SHAPE.warmupMs / 1_000} s warm-up, ${SHAPE.windowMs / 1_000} s window`,
    tookMs: Date.now() - began,
    rows,
    noopUsPerCall: meanNoop(rows),
    ...(floor === undefined ? {} : { diskFloorAt64PerSecond: floor }),
    extraRows: extraRowsOf(extra, rows, cpus().length),
    extra,
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
