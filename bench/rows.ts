/**
 * One measured window per function: h2load where one request body serves, the lean
 * generator (bench/load.ts, HTTP/2 frames on node:net) where each call needs its own. Both generators
 * run in processes of their own; the server's, Redis's and the generator's CPU are
 * read from /proc/<pid>/stat the moment the generator opens and closes its window.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import { requestFrame } from "./grpc-frames.js";
import { connectAll, unaryCall } from "./h2-client.js";
import { H2LOAD_MARKS, h2loadArgs, latencyFromLog, parseH2loadSummary } from "./h2load.js";
import type { LoadConfig, LoadResult } from "./load.js";
import { type CpuSample, lastJsonLine, runMeasured, type WindowCpu, windowCpu } from "./measure.js";
import type { Row } from "./report.js";

/** The load every window applies: 4 connections × 16 streams, a warm-up, a window. */
export interface LoadShape {
  readonly connections: number;
  readonly inFlight: number;
  readonly warmupMs: number;
  readonly windowMs: number;
}

/** The processes whose CPU a window reads (the generator is added by the runner). */
export interface Watched {
  readonly server: number;
  readonly redis: number;
}

/** What a row's caller decides. */
export interface RowSpec {
  readonly scenario: string;
  readonly writes: boolean;
  readonly target?: number;
}

/** The CPU of the window between two marks; throws when one was never printed. */
export function between(samples: Map<string, CpuSample>, start: string, end: string): WindowCpu {
  const a = samples.get(start);
  const b = samples.get(end);
  if (a === undefined || b === undefined) throw new Error(`no ${start}/${end} marks`);
  return windowCpu(a, b);
}

function rowOf(
  spec: RowSpec,
  generator: string,
  figures: Omit<Row, keyof RowSpec | "generator" | "serverCpuUsPerCall" | "cores">,
  cpu: WindowCpu,
): Row {
  return {
    ...spec,
    generator,
    ...figures,
    serverCpuUsPerCall: ((cpu.cpuSeconds.server ?? Number.NaN) / Math.max(1, figures.calls)) * 1e6,
    cores: {
      server: cpu.cores.server ?? Number.NaN,
      generator: cpu.cores.generator ?? Number.NaN,
      redis: cpu.cores.redis ?? Number.NaN,
      machine: cpu.cores.machine ?? Number.NaN,
      cpuStall: cpu.cores["stall:cpu"] ?? Number.NaN,
      ioStall: cpu.cores["stall:io"] ?? Number.NaN,
      serverIdle: cpu.cores["idle:server"] ?? Number.NaN,
      redisIdle: cpu.cores["idle:redis"] ?? Number.NaN,
      redisIo: cpu.cores["io:redis"] ?? Number.NaN,
    },
  };
}

/** One call of `body`, which must answer grpc-status 0 (h2load cannot tell). */
async function probe(
  address: string,
  path: string,
  body: Buffer,
  headers: Readonly<Record<string, string>> = {},
): Promise<void> {
  const [session] = await connectAll(address, 1);
  if (session === undefined) throw new Error("no connection");
  const answer = await unaryCall(session, path, body, headers);
  session.close();
  if (answer.status !== 0) throw new Error(`probe of ${path} answered ${answer.error}`);
}

/**
 * A window of h2load posting one request over and over. A probe call before and after
 * checks the body is answered OK; for a read, which changes nothing, every call of the
 * window then was.
 */
export async function h2loadRow<Desc extends DescMessage>(
  spec: RowSpec,
  address: string,
  watched: Watched,
  shape: LoadShape,
  call: {
    path: string;
    schema: Desc;
    init: MessageInitShape<Desc>;
    headers?: Readonly<Record<string, string>>;
  },
): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-h2load-"));
  try {
    const body = requestFrame(call.schema, call.init);
    const bodyFile = join(dir, "body.bin");
    const logFile = join(dir, "requests.log");
    writeFileSync(bodyFile, body);
    await probe(address, call.path, body, call.headers);
    const args = h2loadArgs({
      address,
      path: call.path,
      bodyFile,
      logFile,
      connections: shape.connections,
      streams: shape.inFlight,
      warmupMs: shape.warmupMs,
      windowMs: shape.windowMs,
      ...(call.headers === undefined ? {} : { headers: call.headers }),
    });
    const { stdout, samples } = await runMeasured("h2load", args, { ...watched }, H2LOAD_MARKS);
    await probe(address, call.path, body, call.headers);
    const summary = parseH2loadSummary(stdout);
    const latency = latencyFromLog(readFileSync(logFile, "utf8"));
    const cpu = between(samples, "window-start", "window-end");
    const errors = summary.failed + summary.errored + summary.timeout + summary.non2xx;
    return rowOf(
      spec,
      "h2load",
      {
        calls: latency.calls,
        errors,
        ...(errors > 0
          ? { firstError: `h2load: ${summary.failed} failed, ${summary.non2xx} non-2xx` }
          : {}),
        callsPerSecond: latency.calls / cpu.seconds,
        p50Ms: latency.p50Ms,
        p90Ms: latency.p90Ms,
        p99Ms: latency.p99Ms,
        windowSeconds: cpu.seconds,
      },
      cpu,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A window of the lean generator (bench/load.ts), in a process of its own. */
export async function nodeRow(
  spec: RowSpec,
  watched: Watched,
  shape: LoadShape,
  config: Omit<LoadConfig, keyof LoadShape>,
): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-load-"));
  try {
    // The config goes through a file: tens of thousands of ids do not fit in argv.
    const file = join(dir, "config.json");
    writeFileSync(file, JSON.stringify({ ...config, ...shape }));
    const { stdout, samples } = await runMeasured(
      process.execPath,
      ["--import", "tsx", "bench/load.ts", file],
      { ...watched },
      { "window-start": /^window-start$/, "window-end": /^window-end$/ },
    );
    const result = lastJsonLine<LoadResult>(stdout);
    const cpu = between(samples, "window-start", "window-end");
    const note = result.exhausted
      ? `its ${config.sessions.length || config.pairs.length} prepared ids ran out: a ${(result.windowMs / 1_000).toFixed(1)} s window`
      : undefined;
    return rowOf(
      { ...spec },
      "frames",
      {
        calls: result.calls,
        errors: result.errors,
        ...(result.firstError === undefined ? {} : { firstError: result.firstError }),
        callsPerSecond: result.callsPerSecond,
        p50Ms: result.p50Ms,
        p90Ms: result.p90Ms,
        p99Ms: result.p99Ms,
        windowSeconds: cpu.seconds,
        ...(note === undefined ? {} : { note }),
      },
      cpu,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
