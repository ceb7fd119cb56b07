/**
 * The "also measured" lines of the report: each figure measured outside the load
 * windows, said in words beside its target. Pure.
 */

import type { AuthCostResult } from "./auth-cost.js";
import type { ClusterNoticesResult } from "./cluster-notices.js";
import type { FanoutFigures, StartConcurrencyFigures } from "./extras.js";
import type { HeartbeatFigures } from "./heartbeats.js";
import type { HistoryBenchResult } from "./history.js";
import type { McpCostResult } from "./mcp-cost.js";
import type { RedisBenchmarkFigure } from "./redis-floor.js";
import type { ReplicaWaitPair, ReplicaWaitResult } from "./replica-wait.js";
import { type ExtraRow, limitOf, type Row } from "./report.js";
import type { RetryLayerResult } from "./retry-layer.js";
import type { SentinelResult } from "./sentinel.js";
import type { TracingOffResult } from "./tracing-off.js";
import type { WorkspaceInboxResult } from "./workspace-inbox.js";

/** Everything measured outside the load windows; a step not run is absent. */
export interface Extra {
  h2load?: string;
  diskFloor?:
    | { readonly at64: RedisBenchmarkFigure; readonly at1: RedisBenchmarkFigure }
    | undefined;
  startConcurrency?: StartConcurrencyFigures | undefined;
  fanout?: FanoutFigures | undefined;
  /** The same run against node:http2 alone (bench/fanout-floor.ts). */
  fanoutFloor?: FanoutFigures | undefined;
  watchers?: Record<string, unknown> | undefined;
  history?: HistoryBenchResult | undefined;
  tracingOff?: TracingOffResult | undefined;
  workspaceInbox?: WorkspaceInboxResult | undefined;
  authCost?: AuthCostResult | undefined;
  /** suggest_task over MCP against SuggestTask over Connect JSON (bench/mcp-cost.ts). */
  mcpCost?: McpCostResult | undefined;
  heartbeats?: HeartbeatFigures | undefined;
  retryLayer?: RetryLayerResult | undefined;
  /** `REDIS_WAIT_REPLICAS=1` against 0 on a primary with one replica (bench/replica-wait.ts). */
  replicaWait?: ReplicaWaitResult | undefined;
  /** SuggestTask through Sentinel against the primary direct (bench/sentinel.ts). */
  sentinel?: SentinelResult | undefined;
  /** Redis CPU per offer on 3 and 9 primaries (bench/cluster-notices.ts; BENCH_CLUSTER=1). */
  clusterNotices?: ClusterNoticesResult | undefined;
}

const n0 = (x: number) => Math.round(x).toLocaleString("en-US");
const n1 = (x: number) => x.toFixed(1);

function suggestTaskLines(extra: Extra, rows: readonly Row[], machineCores: number): ExtraRow[] {
  const row = rows.find((r) => r.scenario.startsWith("SuggestTask"));
  const floor = extra.diskFloor;
  const lines: ExtraRow[] = [];
  if (row !== undefined) {
    const limit = limitOf({
      cores: row.cores,
      machineCores,
      writesPerSecond: row.callsPerSecond,
      ...(floor === undefined ? {} : { diskFloorPerSecond: floor.at64.requestsPerSecond }),
    });
    lines.push({
      measure: "SuggestTask at 64 in flight: what limits it",
      figure: `${limit} (server ${row.cores.server.toFixed(2)} core)`,
      target: "the server's CPU, not waiting",
      met: limit === "server CPU",
    });
  }
  if (floor !== undefined) {
    const writes =
      row === undefined ? "" : `SuggestTask ${n0(row.callsPerSecond)} writes/s beside `;
    lines.push({
      measure: "writes against the disk's floor (`redis-benchmark` XADD, `appendfsync always`)",
      figure: `${writes}${n0(floor.at64.requestsPerSecond)}/s at 64 clients (p50 ${floor.at64.p50Ms} ms), ${n0(floor.at1.requestsPerSecond)}/s at 1 (p50 ${floor.at1.p50Ms} ms)`,
      target: "",
    });
  }
  return lines;
}

function startLine(s: StartConcurrencyFigures): ExtraRow {
  const cpuRatio = s.serverCpuMsPerBatch / s.serverCpuMsPerSingle;
  const chats = s.oneChatEach ? "one chat every time" : "NOT one chat every time";
  const errors = s.errors > 0 ? `; ${s.errors} errors: ${s.firstError ?? "?"}` : "";
  return {
    measure: "50 concurrent Starts of one suggestion vs one Start",
    figure: `${n1(s.fiftyConcurrentMs)} vs ${n1(s.singleMs)} ms (${s.ratio.toFixed(1)}×); 50 concurrent GetSuggestion calls of it, which do no work, take ${n1(s.fiftyGetsMs)} ms (the floor: one Start plus them is ${((s.singleMs + s.fiftyGetsMs) / s.singleMs).toFixed(1)}×); server CPU ${n1(s.serverCpuMsPerBatch)} ms a batch vs ${n1(s.serverCpuMsPerSingle)} ms a Start (${cpuRatio.toFixed(1)}×), and ${n1(s.serverCpuMsPerFiftyGets)} ms for the 50 GetSuggestion calls; ${chats} (${s.batches} batches, ${s.singles} single)${errors}`,
    target: "≤ 2× one Start",
    met: s.ratio <= 2 && s.oneChatEach && s.errors === 0,
  };
}

function fanoutLine(f: FanoutFigures, floor: FanoutFigures | undefined): ExtraRow {
  const perMessage = floor?.serverCpuUsPerMessage ?? Number.NaN;
  const floorText =
    floor === undefined
      ? ""
      : `; node:http2 alone, the same changes and generator (bench/fanout-floor.ts): ${n1(perMessage)} µs, so the service is ${(f.serverCpuUsPerMessage / perMessage).toFixed(2)}× its floor`;
  return {
    measure: `a change reaching ${n0(f.watchers)} watchers of one chat`,
    figure: `${n1(f.serverCpuUsPerMessage)} µs server CPU per delivered message (${n0(f.deliveredMessages)} messages of ${f.changes} changes; every watcher has it in ${n1(f.medianDeliveryMs)} ms median, ${n1(f.maxDeliveryMs)} ms worst; server ${f.serverCores.toFixed(2)}, generator ${f.generatorCores.toFixed(2)} core)${floorText}`,
    target: "≤ 10 µs per message",
    met: f.serverCpuUsPerMessage <= 10,
  };
}

function historyLine(h: HistoryBenchResult): ExtraRow {
  const list = h.history10k.listUs / h.fresh.listUs;
  const offer = h.history10k.offerUs / h.fresh.offerUs;
  return {
    measure: "a chat of 10,000 records vs a fresh one (store calls in process, per call)",
    figure: `list ${n0(h.history10k.listUs)} vs ${n0(h.fresh.listUs)} µs (${list.toFixed(2)}×); offer ${n0(h.history10k.offerUs)} vs ${n0(h.fresh.offerUs)} µs (${offer.toFixed(2)}×)`,
    target: "≤ 1.2×",
    met: list <= 1.2 && offer <= 1.2,
  };
}

function tracingOffLine(t: TracingOffResult): ExtraRow {
  return {
    measure: "tracing off (no OpenTelemetry SDK) vs no tracing calls, per SuggestTask path",
    figure: `+${n1(t.overheadNsPerCall / 1000)} µs (${n0(t.calls)} calls in process; ${t.headersRead} header reads)`,
    target: "nothing measurable",
  };
}

function inboxLines(w: WorkspaceInboxResult): ExtraRow[] {
  return [
    {
      measure: "workspace inbox (10,000 chats, 3,000 open): first page vs one chat's List",
      figure: `${n0(w.firstPageUs)} vs ${n0(w.listSuggestionsUs)} µs server CPU (${w.firstPageVsList.toFixed(2)}×)`,
      target: "≤ 2×",
      met: w.firstPageVsList <= 2,
    },
    {
      measure: "an offer with the inbox vs without",
      figure: `${n0(w.offerWithInboxUs)} vs ${n0(w.offerWithoutInboxUs)} µs server CPU (${w.offerWithVsWithout.toFixed(2)}×)`,
      target: "≤ 1.2×",
      met: w.offerWithVsWithout <= 1.2,
    },
  ];
}

function watchersLine(w: Record<string, unknown>): ExtraRow {
  const num = (key: string) => Number(w[key]);
  return {
    measure: `${n0(num("watchers"))} idle watchers on one instance`,
    figure: `${n0(num("serverRssMb"))} MB RSS (${n0(num("rssBeforeMb"))} MB before), ${num("serverRedisConnections")} Redis connections, an offer reaches all watchers of its chat in ${n1(num("medianDeliveryMs"))} ms (median) / ${n1(num("maxDeliveryMs"))} ms (worst)`,
    target: "",
  };
}

/** GetSuggestion's server CPU per call with a JWT, as a multiple of a static token's. */
function authCostLine(a: AuthCostResult): ExtraRow {
  return {
    measure: "GetSuggestion with a JWT vs with a static token (server CPU per call)",
    figure: `${n1(a.jwtUsPerCall)} vs ${n1(a.staticUsPerCall)} µs (${a.ratio.toFixed(2)}×)`,
    target: "≤ 1.15×",
    met: a.ratio <= 1.15,
  };
}

/** suggest_task's server CPU per call over MCP, as a multiple of SuggestTask's over Connect JSON. */
function mcpCostLine(m: McpCostResult): ExtraRow {
  const failed = m.errors > 0 ? `; ${m.errors} calls failed` : "";
  return {
    measure: "suggest_task over MCP vs SuggestTask over Connect JSON (server CPU per call)",
    figure: `${n1(m.mcpUsPerCall)} vs ${n1(m.connectUsPerCall)} µs (${m.ratio.toFixed(2)}×)${failed}`,
    target: "≤ 1.5×",
    met: m.ratio <= 1.5 && m.errors === 0,
  };
}

function heartbeatLines(h: HeartbeatFigures): ExtraRow[] {
  const on = h.with;
  const off = h.without;
  const failed = on.failed + off.failed;
  const failures =
    failed > 0 ? `; ${failed} streams failed: ${on.firstError ?? off.firstError}` : "";
  const extraCores = on.serverCores - off.serverCores;
  const memory = on.serverRssMb / off.serverRssMb;
  return [
    {
      measure: `${n0(on.watchers)} idle watchers with heartbeats every ${on.heartbeatSeconds} s: server CPU`,
      figure: `${(on.serverCores * 100).toFixed(2)} % of a core over ${n1(on.windowSeconds)} s (${n0(on.heartbeatsInWindow)} heartbeats delivered), ${(off.serverCores * 100).toFixed(2)} % without heartbeats (${n1(off.windowSeconds)} s, an instance of its own): heartbeats add ${(extraCores * 100).toFixed(2)} %${failures}`,
      target: "≤ 2 % of a core",
      met: on.serverCores <= 0.02 && failed === 0 && on.heartbeatsInWindow > 0,
    },
    {
      measure: `${n0(on.watchers)} idle watchers with heartbeats vs without: server memory`,
      figure: `${n0(on.serverRssMb)} vs ${n0(off.serverRssMb)} MB RSS (${memory.toFixed(3)}×), each on an instance of its own, read with every stream open`,
      target: "≤ 1.10× without",
      met: memory <= 1.1,
    },
  ];
}

function retryLayerLine(r: RetryLayerResult): ExtraRow {
  const share = r.layerUs / r.withoutRetryUs;
  return {
    measure:
      "a unary call (ListSuggestions) through the SDK's retry layer vs `retry: false`: client CPU",
    figure: `${n1(r.withRetryUs)} vs ${n1(r.withoutRetryUs)} µs per call (medians of ${r.rounds} rounds of ${n0(r.callsPerRound)} calls each, in alternating order; the median of the rounds' ratios ${r.ratio.toFixed(3)}×); the layer itself, in process: ${r.layerUs.toFixed(2)} µs a call, ${(share * 100).toFixed(2)} % of a call without it`,
    target: "≤ 1.05×",
    met: r.ratio <= 1.05 && share <= 0.05,
  };
}

function replicaWaitLine(p: ReplicaWaitPair): ExtraRow {
  const ratio = p.on.serverCpuUsPerCall / p.off.serverCpuUsPerCall;
  const errors = p.on.errors + p.off.errors;
  return {
    measure: `${p.scenario} with \`REDIS_WAIT_REPLICAS=1\` vs 0, on a primary with one replica`,
    figure: `server CPU ${n0(p.on.serverCpuUsPerCall)} vs ${n0(p.off.serverCpuUsPerCall)} µs a call (${ratio.toFixed(2)}×); p50 ${p.on.p50Ms.toFixed(2)} vs ${p.off.p50Ms.toFixed(2)} ms (${p.on.p50Ms >= p.off.p50Ms ? "+" : ""}${(p.on.p50Ms - p.off.p50Ms).toFixed(2)} ms), p99 ${p.on.p99Ms.toFixed(2)} vs ${p.off.p99Ms.toFixed(2)} ms; ${n0(p.on.callsPerSecond)} vs ${n0(p.off.callsPerSecond)} calls/s (windows of 0, 1, 1, 0)${errors > 0 ? `; ${errors} errors: ${p.on.firstError ?? p.off.firstError ?? "?"}` : ""}`,
    target: "server CPU ≤ 1.1×",
    met: ratio <= 1.1 && errors === 0,
  };
}

function sentinelLine(r: SentinelResult): ExtraRow {
  const ratio = r.sentinel.serverCpuUsPerCall / r.direct.serverCpuUsPerCall;
  const errors = r.sentinel.errors + r.direct.errors;
  return {
    measure:
      "SuggestTask through Sentinel (`redis+sentinel://`) vs the same primary direct (`redis://`)",
    figure: `server CPU ${n0(r.sentinel.serverCpuUsPerCall)} vs ${n0(r.direct.serverCpuUsPerCall)} µs a call (${ratio.toFixed(2)}×); p50 ${r.sentinel.p50Ms.toFixed(2)} vs ${r.direct.p50Ms.toFixed(2)} ms; ${n0(r.sentinel.callsPerSecond)} vs ${n0(r.direct.callsPerSecond)} calls/s (windows of direct, Sentinel, Sentinel, direct)${errors > 0 ? `; ${errors} errors: ${r.sentinel.firstError ?? r.direct.firstError ?? "?"}` : ""}`,
    target: "≤ 1.05×",
    met: ratio <= 1.05 && errors === 0,
  };
}

function clusterNoticesLine(c: ClusterNoticesResult): ExtraRow {
  return {
    measure: c.measure,
    figure: c.figure,
    target: "≤ 1.3× at the same load per primary, and at 8 in flight on both",
    met: c.pairings.every((p) => p.name === "same calls in flight" || p.ratio <= 1.3),
  };
}

/** The "also measured" lines, in the report's order. */
export function extraRowsOf(extra: Extra, rows: readonly Row[], machineCores: number): ExtraRow[] {
  return [
    ...suggestTaskLines(extra, rows, machineCores),
    ...(extra.startConcurrency === undefined ? [] : [startLine(extra.startConcurrency)]),
    ...(extra.fanout === undefined ? [] : [fanoutLine(extra.fanout, extra.fanoutFloor)]),
    ...(extra.history === undefined ? [] : [historyLine(extra.history)]),
    ...(extra.watchers === undefined ? [] : [watchersLine(extra.watchers)]),
    ...(extra.heartbeats === undefined ? [] : heartbeatLines(extra.heartbeats)),
    ...(extra.retryLayer === undefined ? [] : [retryLayerLine(extra.retryLayer)]),
    ...(extra.tracingOff === undefined ? [] : [tracingOffLine(extra.tracingOff)]),
    ...(extra.workspaceInbox === undefined ? [] : inboxLines(extra.workspaceInbox)),
    ...(extra.authCost === undefined ? [] : [authCostLine(extra.authCost)]),
    ...(extra.mcpCost === undefined ? [] : [mcpCostLine(extra.mcpCost)]),
    ...(extra.replicaWait?.pairs.map(replicaWaitLine) ?? []),
    ...(extra.sentinel === undefined ? [] : [sentinelLine(extra.sentinel)]),
    ...(extra.clusterNotices === undefined ? [] : [clusterNoticesLine(extra.clusterNotices)]),
  ];
}
