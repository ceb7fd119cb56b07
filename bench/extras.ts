/**
 * The figures measured outside the load windows, each by a process of its own on the
 * lean client, with the server's CPU read around its measured phase: 50 concurrent
 * Starts of one suggestion (bench/start-concurrency.ts) and a change reaching 1,000
 * watchers of one chat (bench/fanout-load.ts).
 */
import type { FanoutResult } from "./fanout-load.js";
import { lastJsonLine, runMeasured } from "./measure.js";
import { between, type Watched } from "./rows.js";
import type { StartConcurrencyResult } from "./start-concurrency.js";

const node = (script: string, arg: unknown) => ({
  command: process.execPath,
  args: ["--import", "tsx", script, JSON.stringify(arg)],
});

/** What 50 concurrent Starts cost beside one, in time and in server CPU. */
export interface StartConcurrencyFigures extends StartConcurrencyResult {
  /**
   * Server CPU of one Start alone, of one batch of 50 concurrent Starts, and of the 50
   * concurrent GetSuggestion calls of one batch's suggestion, in ms.
   */
  readonly serverCpuMsPerSingle: number;
  readonly serverCpuMsPerBatch: number;
  readonly serverCpuMsPerFiftyGets: number;
}

/** Runs bench/start-concurrency.ts on `pairs` (half single, half in batches of 50). */
export async function measureStartConcurrency(
  address: string,
  watched: Watched,
  pairs: readonly (readonly [string, string])[],
): Promise<StartConcurrencyFigures> {
  const { command, args } = node("bench/start-concurrency.ts", { address, pairs });
  const marks = {
    "single-start": /^single-start$/,
    "single-end": /^single-end$/,
    "fifty-start": /^fifty-start$/,
    "fifty-end": /^fifty-end$/,
    "gets-start": /^gets-start$/,
    "gets-end": /^gets-end$/,
  };
  const { stdout, samples } = await runMeasured(command, args, { ...watched }, marks);
  const result = lastJsonLine<StartConcurrencyResult>(stdout);
  const single = between(samples, "single-start", "single-end").cpuSeconds.server ?? Number.NaN;
  const fifty = between(samples, "fifty-start", "fifty-end").cpuSeconds.server ?? Number.NaN;
  const gets = between(samples, "gets-start", "gets-end").cpuSeconds.server ?? Number.NaN;
  return {
    ...result,
    serverCpuMsPerSingle: (single / Math.max(1, result.singles)) * 1_000,
    serverCpuMsPerBatch: (fifty / Math.max(1, result.batches)) * 1_000,
    // Each batch's suggestion is read once first (into the lists cache), then 50 times.
    serverCpuMsPerFiftyGets: (gets / Math.max(1, result.batches)) * 1_000,
  };
}

/** What a change of one chat costs the server per watcher it reaches. */
export interface FanoutFigures extends FanoutResult {
  readonly serverCpuUsPerMessage: number;
  readonly serverCores: number;
  readonly generatorCores: number;
}

/** Runs bench/fanout-load.ts: `watchers` streams of `sessionId`, `changes` changes. */
export async function measureFanout(
  address: string,
  watched: Watched,
  redisUrl: string,
  sessionId: string,
  watchers: number,
  changes: number,
): Promise<FanoutFigures> {
  const { command, args } = node("bench/fanout-load.ts", {
    address,
    redisUrl,
    sessionId,
    watchers,
    changes,
  });
  const marks = { "fanout-start": /^fanout-start$/, "fanout-end": /^fanout-end$/ };
  const { stdout, samples } = await runMeasured(command, args, { ...watched }, marks);
  const result = lastJsonLine<FanoutResult>(stdout);
  const cpu = between(samples, "fanout-start", "fanout-end");
  return {
    ...result,
    serverCpuUsPerMessage:
      ((cpu.cpuSeconds.server ?? Number.NaN) / Math.max(1, result.deliveredMessages)) * 1e6,
    serverCores: cpu.cores.server ?? Number.NaN,
    generatorCores: cpu.cores.generator ?? Number.NaN,
  };
}
