/**
 * The bench's figures as a Markdown table and a JSON file (bench/results/, git-ignored),
 * every row's server CPU read as a ratio to the grpc-js noop of the same run, beside
 * the target set for it and what limited the row. Targets are reported, never
 * enforced: timing decides no exit code. `limitOf` is pure (test/bench/report.test.ts).
 */
import { mkdirSync, writeFileSync } from "node:fs";

/** One measured load window. */
export interface Row {
  readonly scenario: string;
  /** `h2load` (one body posted over and over) or `frames` (bench/load.ts). */
  readonly generator: string;
  readonly calls: number;
  readonly errors: number;
  readonly firstError?: string;
  readonly callsPerSecond: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly windowSeconds: number;
  readonly serverCpuUsPerCall: number;
  /** Share of one core each process, and the whole machine, used during the window. */
  readonly cores: {
    readonly server: number;
    readonly generator: number;
    readonly redis: number;
    readonly machine: number;
    /** The window's PSI "some" shares for CPU and for I/O (`coresText`). */
    readonly cpuStall?: number;
    readonly ioStall?: number;
    /**
     * The shares of the window the main threads of the server and of Redis were idle,
     * and Redis's in I/O (its fsync), sampled from their scheduler state
     * (bench/measure.ts `ThreadTimes`).
     */
    readonly serverIdle?: number;
    readonly redisIdle?: number;
    readonly redisIo?: number;
  };
  /** Whether each call appends to the AOF (its floor is then the disk's). */
  readonly writes: boolean;
  /** Issue 16's bound on server CPU per call, × the grpc-js noop; none for baselines. */
  readonly target?: number;
  /** A remark on the window, e.g. that its prepared bodies ran out. */
  readonly note?: string;
}

/** A figure measured outside the load windows, with its target when the issue sets one. */
export interface ExtraRow {
  readonly measure: string;
  readonly figure: string;
  readonly target: string;
  readonly met?: boolean;
}

/** What decides a row's "limited by". */
export interface LimitInput {
  readonly cores: Row["cores"];
  readonly machineCores: number;
  /** Writes per second of the row, for writes; its AOF fsync floor at the same concurrency. */
  readonly writesPerSecond?: number;
  readonly diskFloorPerSecond?: number;
}

/** A process at or above this share of one core is what limits the row. */
const NEAR_A_CORE = 0.85;

/**
 * What limited a window: the process (server, generator, Redis) that used most of one
 * core when one came near a full core; else the server's or Redis's main thread when it
 * was idle for 15 % of the window or less (the rest on a core, waiting for one, or, for
 * Redis, in its fsync), the less idle of the two; else the
 * machine when all its cores were busy (on a shared machine, partly with other
 * processes' work); else, for writes going at 80 % or more of the disk's fsync floor,
 * the AOF fsync; else waiting (each call spends its time on round trips, not on a CPU).
 */
export function limitOf(input: LimitInput): string {
  const { server, generator, redis } = input.cores;
  const shares: [string, number][] = [
    ["server CPU", server],
    ["generator CPU", generator],
    ["Redis CPU", redis],
  ];
  shares.sort((a, b) => b[1] - a[1]);
  const [name, share] = shares[0] as [string, number];
  if (share >= NEAR_A_CORE) return name;
  const { serverIdle, redisIdle, redisIo } = input.cores;
  const seldomIdle = (idle: number | undefined): idle is number =>
    idle !== undefined && idle <= 1 - NEAR_A_CORE;
  if (seldomIdle(redisIdle) && !(seldomIdle(serverIdle) && serverIdle < redisIdle)) {
    return `Redis's main thread (idle ${percent(redisIdle)} of the window, in I/O ${percent(redisIo)})`;
  }
  if (seldomIdle(serverIdle)) {
    return `the server's main thread (idle ${percent(serverIdle)} of the window)`;
  }
  const { machine } = input.cores;
  if (machine >= 0.9 * input.machineCores) {
    const others = Math.max(0, machine - server - generator - redis);
    return `machine busy (other processes used ${others.toFixed(2)} of ${input.machineCores} cores)`;
  }
  const { writesPerSecond, diskFloorPerSecond } = input;
  if (
    writesPerSecond !== undefined &&
    diskFloorPerSecond !== undefined &&
    writesPerSecond >= 0.8 * diskFloorPerSecond
  ) {
    return "AOF fsync";
  }
  return "waiting (no process near a core)";
}

const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : "-");

/** A share as a whole percentage. */
const percent = (share: number | undefined) => `${fixed((share ?? Number.NaN) * 100, 0)} %`;

function tableLine(cells: readonly string[]): string {
  return `| ${cells.join(" | ")} |`;
}

/**
 * A row's cores, and, where the kernel keeps pressure stall information, its "some"
 * shares of the window for CPU and I/O: machine-wide, averaged over the cores (so on 2
 * cores 15 % may be one core with a task waiting 30 % of the time), and counting every
 * process of the machine. What "waiting" waited for: cores, or I/O such as the fsync.
 * Then the shares of the window the server's and Redis's main threads were idle, and
 * Redis's in I/O (its fsync, off the CPU).
 */
export function coresText(c: Row["cores"]): string {
  const cores = `cores: server ${fixed(c.server, 2)}, generator ${fixed(c.generator, 2)}, Redis ${fixed(c.redis, 2)}, machine ${fixed(c.machine, 2)}`;
  const parts = [cores];
  if (Number.isFinite(c.cpuStall) || Number.isFinite(c.ioStall)) {
    parts.push(`PSI some: CPU ${percent(c.cpuStall)}, I/O ${percent(c.ioStall)}`);
  }
  if (Number.isFinite(c.serverIdle) || Number.isFinite(c.redisIdle)) {
    parts.push(
      `main threads idle: server ${percent(c.serverIdle)}, Redis ${percent(c.redisIdle)}; Redis in I/O ${percent(c.redisIo)}`,
    );
  }
  return parts.join("; ");
}

/** Everything one run measured. */
export interface Report {
  readonly machine: string;
  readonly machineCores: number;
  readonly settings: string;
  readonly tookMs: number;
  readonly rows: readonly Row[];
  /** The grpc-js noop's server CPU per call (mean of its windows), the unit of every ratio. */
  readonly noopUsPerCall: number;
  readonly diskFloorAt64PerSecond?: number;
  readonly extraRows: readonly ExtraRow[];
  readonly extra: object;
}

/** The main table's lines. */
function rowLines(report: Report): string[] {
  return report.rows.map((r) => {
    const ratio = r.serverCpuUsPerCall / report.noopUsPerCall;
    const limit = limitOf({
      cores: r.cores,
      machineCores: report.machineCores,
      ...(r.writes ? { writesPerSecond: r.callsPerSecond } : {}),
      ...(r.writes && report.diskFloorAt64PerSecond !== undefined
        ? { diskFloorPerSecond: report.diskFloorAt64PerSecond }
        : {}),
    });
    const cores = coresText(r.cores);
    const remarks = [
      r.note,
      r.errors > 0 ? `${r.errors} errors: ${r.firstError ?? "?"}` : undefined,
    ].filter((x) => x !== undefined);
    return tableLine([
      r.scenario,
      r.generator,
      fixed(r.callsPerSecond, 0),
      fixed(r.p50Ms, 2),
      fixed(r.p99Ms, 2),
      fixed(r.serverCpuUsPerCall, 0),
      fixed(ratio, 2),
      r.target === undefined ? "" : `≤ ${r.target}`,
      r.target === undefined ? "" : ratio <= r.target ? "yes" : "no",
      `${limit}; ${cores}${remarks.length > 0 ? `; ${remarks.join("; ")}` : ""}`,
    ]);
  });
}

/** The report as Markdown. */
export function markdownOf(report: Report): string {
  return [
    `Machine: ${report.machine}. Command: \`npm run bench\` (${report.settings}; took ${fixed(report.tookMs / 1_000, 0)} s).`,
    `Every ratio is server CPU per call ÷ ${fixed(report.noopUsPerCall, 1)} µs, the grpc-js noop's (mean of its windows in this run). Targets are reported, never enforced.`,
    "",
    tableLine([
      "scenario",
      "generator",
      "calls/s",
      "p50 ms",
      "p99 ms",
      "server CPU µs/call",
      "× grpc-js noop",
      "target",
      "met",
      "limited by",
    ]),
    "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
    ...rowLines(report),
    "",
    tableLine(["also measured", "figure", "target", "met"]),
    "|---|---|---|---|",
    ...report.extraRows.map((e) =>
      tableLine([e.measure, e.figure, e.target, e.met === undefined ? "" : e.met ? "yes" : "no"]),
    ),
  ].join("\n");
}

/** Writes bench/results/latest.md and latest.json and prints the Markdown. */
export function writeReport(report: Report): void {
  const markdown = markdownOf(report);
  mkdirSync("bench/results", { recursive: true });
  writeFileSync("bench/results/latest.md", `${markdown}\n`);
  writeFileSync("bench/results/latest.json", `${JSON.stringify(report, null, 2)}\n`);
  console.log(markdown);
}
