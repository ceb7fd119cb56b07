/**
 * `npm run bench`: the service measured the way its users load it, every figure as a
 * ratio to noop baselines measured in the same run on the same machine (machines here
 * are shared and noisy; absolute times vary from run to run). Writes a Markdown table
 * and a JSON file to bench/results/ and prints the table.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startRedisServer } from "../server/redis/redis-server-process.js";
import type { LoadConfig, LoadResult } from "./load.js";
import { cpuSeconds, startNode } from "./measure.js";
import { prepare } from "./prepare.js";
import { measureStartConcurrency } from "./start-concurrency.js";
import { measureWatchers } from "./watchers.js";
import { measureWorkspaceInbox } from "./workspace-inbox.js";

const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2_000);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 8_000);
const CONNECTIONS = 4;
const IN_FLIGHT = 16;

/** One row of the table. */
interface Row {
  scenario: string;
  server: string;
  result: LoadResult;
  serverCpuUsPerCall: number;
  /** Share of one core each process used during the window: what limits the figure. */
  serverCores: number;
  loadCores: number;
  redisCores: number;
}

async function loadRun(
  serverPid: number,
  redisPid: number,
  config: Omit<LoadConfig, "warmupMs" | "windowMs" | "connections" | "inFlight">,
): Promise<Omit<Row, "scenario" | "server">> {
  const full: LoadConfig = {
    ...config,
    warmupMs: WARMUP_MS,
    windowMs: WINDOW_MS,
    connections: CONNECTIONS,
    inFlight: IN_FLIGHT,
  };
  // The config goes through a file: tens of thousands of ids do not fit in argv.
  const configFile = join(mkdtempSync(join(tmpdir(), "suggest-task-load-")), "config.json");
  writeFileSync(configFile, JSON.stringify(full));
  const child = spawn(process.execPath, ["--import", "tsx", "bench/load.ts", configFile], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const loadPid = child.pid ?? 0;
  let start = { server: 0, load: 0, redis: 0, at: 0 };
  let end = { ...start };
  const sample = () => ({
    server: cpuSeconds(serverPid),
    load: cpuSeconds(loadPid),
    redis: cpuSeconds(redisPid),
    at: performance.now(),
  });
  const result = await new Promise<LoadResult>((resolve, reject) => {
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl = buffer.indexOf("\n");
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line === "window-start") start = sample();
        else if (line === "window-end") end = sample();
        else if (line.startsWith("{")) resolve(JSON.parse(line) as LoadResult);
        nl = buffer.indexOf("\n");
      }
    });
    child.once("exit", (code) =>
      code === 0 ? undefined : reject(new Error(`load exited ${code}`)),
    );
  });
  const seconds = (end.at - start.at) / 1000;
  return {
    result,
    serverCpuUsPerCall: ((end.server - start.server) / Math.max(1, result.calls)) * 1e6,
    serverCores: (end.server - start.server) / seconds,
    loadCores: (end.load - start.load) / seconds,
    redisCores: (end.redis - start.redis) / seconds,
  };
}

/**
 * What limits a row: the process that used most of a core, or, when none came near one,
 * latency: each call then spends most of its time waiting on its Redis round trips (and
 * on the AOF fsync of each write, `appendfsync always` as `npm start` runs it).
 */
function limitOf(row: Row): string {
  const shares = {
    "server CPU": row.serverCores,
    "load generator": row.loadCores,
    "Redis CPU": row.redisCores,
  };
  const [name, share] = Object.entries(shares).sort((a, b) => b[1] - a[1])[0] as [string, number];
  const cores = `server ${row.serverCores.toFixed(2)}, load ${row.loadCores.toFixed(2)}, Redis ${row.redisCores.toFixed(2)} cores`;
  return share >= 0.8 ? `${name} (${cores})` : `latency: no process near a core (${cores})`;
}

async function main(): Promise<void> {
  const began = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-bench-"));
  const redis = await startRedisServer({ dir: join(dir, "redis") });
  const rows: Row[] = [];
  const extra: Record<string, unknown> = {};
  // Every server started, stopped in the end even when a step fails.
  const started: { stop: () => Promise<void> }[] = [];
  try {
    console.error("bench: preparing data");
    const data = await prepare(redis.url);
    const runId = `r${Date.now()}`;

    for (const kind of ["connect", "grpc-js"] as const) {
      const port = await freePort();
      const server = await startNode(["bench/noop-server.ts", kind, String(port)], {}, /ready/);
      started.push(server);
      console.error(`bench: noop on ${kind}`);
      const r = await loadRun(server.pid, redis.pid, {
        address: `127.0.0.1:${port}`,
        scenario: "noop",
        sessions: [],
        pairs: [],
        runId,
      });
      rows.push({
        scenario: "noop (baseline)",
        server: kind === "connect" ? "connect-node" : "grpc-js",
        ...r,
      });
      await server.stop();
    }

    for (const fastPath of [true, false]) {
      const port = await freePort();
      const server = await startNode(
        ["server/main.ts"],
        {
          PORT: String(port),
          REDIS_URL: redis.url,
          GRPC_FAST_PATH: fastPath ? "1" : "0",
          LOG_LEVEL: "info",
        },
        /listening on/,
      );
      started.push(server);
      const name = fastPath ? "service, gRPC fast path" : "service, connect-node only";
      const address = `127.0.0.1:${port}`;
      type Scenario = Pick<LoadConfig, "scenario"> &
        Partial<Pick<LoadConfig, "sessions" | "pairs">>;
      const scenarios: [string, Scenario][] = [
        [
          "SuggestTask, fresh session per call",
          {
            scenario: "suggest-task",
            sessions: fastPath ? data.freshSessionsA : data.freshSessionsB,
          },
        ],
        ["ListSuggestions, 3 open + 7 settled", { scenario: "list", sessions: data.listChats }],
      ];
      if (fastPath) {
        scenarios.push([
          "StartSuggestion, embedded host",
          { scenario: "start", pairs: data.startPairs },
        ]);
      }
      for (const [label, s] of scenarios) {
        console.error(`bench: ${label} on ${name}`);
        const r = await loadRun(server.pid, redis.pid, {
          address,
          sessions: [],
          pairs: [],
          runId: `${runId}-${fastPath}`,
          ...s,
        });
        rows.push({ scenario: label, server: name, ...r });
      }
      if (fastPath) {
        console.error("bench: 50 concurrent Starts of one suggestion");
        extra.startConcurrency = await measureStartConcurrency(address, data.concurrencyPairs);
        console.error("bench: 10,000 idle watchers");
        extra.watchers = await measureWatchers(
          address,
          server.pid,
          redis.url,
          data.watchSessions,
          data.watchOfferSessions,
        );
        console.error("bench: a workspace inbox of 10,000 chats and 3,000 open suggestions");
        extra.workspaceInbox = await measureWorkspaceInbox(address, server.pid, redis.url);
      }
      await server.stop();
    }
    console.error("bench: a chat of 10,000 records against a fresh one");
    const { runHistoryBench } = await import("./history.js");
    extra.history = await runHistoryBench(redis.url);
  } finally {
    await Promise.all(started.map((server) => server.stop()));
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  report(rows, extra, Date.now() - began);
}

function report(rows: Row[], extra: Record<string, unknown>, tookMs: number): void {
  const noop = (server: string) =>
    rows.find((r) => r.scenario.startsWith("noop") && r.server === server)?.serverCpuUsPerCall ??
    Number.NaN;
  const connectNoop = noop("connect-node");
  const grpcNoop = noop("grpc-js");
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
  const lines = [
    `Machine: ${machine}. Command: \`npm run bench\` (${CONNECTIONS} connections × ${IN_FLIGHT} in flight, ${WARMUP_MS / 1000} s warm-up, ${WINDOW_MS / 1000} s window; took ${(tookMs / 1000).toFixed(0)} s).`,
    "",
    "| scenario | server | calls/s | p50 ms | p90 ms | p99 ms | server CPU µs/call | × connect-node noop | × grpc-js noop | limited by |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ...rows.map((r) =>
      [
        r.scenario,
        r.server,
        r.result.callsPerSecond.toFixed(0),
        r.result.p50Ms.toFixed(2),
        r.result.p90Ms.toFixed(2),
        r.result.p99Ms.toFixed(2),
        r.serverCpuUsPerCall.toFixed(0),
        (r.serverCpuUsPerCall / connectNoop).toFixed(2),
        (r.serverCpuUsPerCall / grpcNoop).toFixed(2),
        limitOf(r) + (r.result.errors ? `; ${r.result.errors} errors: ${r.result.firstError}` : ""),
      ]
        .join(" | ")
        .replace(/^/, "| ")
        .replace(/$/, " |"),
    ),
    "",
    "```json",
    JSON.stringify(extra, null, 2),
    "```",
  ];
  const markdown = lines.join("\n");
  mkdirSync("bench/results", { recursive: true });
  writeFileSync("bench/results/latest.md", `${markdown}\n`);
  writeFileSync(
    "bench/results/latest.json",
    `${JSON.stringify({ machine, rows, extra }, null, 2)}\n`,
  );
  console.log(markdown);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
