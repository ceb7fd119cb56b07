/**
 * What the SDK's retry layer costs a caller: the client CPU of a unary call through
 * `createSuggestionClient({ baseUrl })` of the Node entry (retries on, the default) against
 * the same client with `retry: false`, in one process of its own, in alternating rounds
 * (on, off, off, on, ...) so that a drift of the machine falls on both. The call is
 * ListSuggestions, a retry-safe read, so every call goes through the retry loop. Client CPU
 * is the process's own (`process.cpuUsage()`), per call. Each round pairs one stretch of
 * each, back to back; the ratio is the median of the rounds' ratios (a pair shares the
 * machine's state of the moment), the µs figures the medians of each side. On a shared
 * machine a round's figure moves by a tenth or more, so the layer's own CPU is also measured
 * in process (the interceptor around a `next` that answers at once, against that `next`
 * alone, as bench/tracing-off.ts does) and set against the call's CPU.
 *
 *   node --import tsx bench/retry-layer.ts '{"address":"127.0.0.1:8080","sessionId":"s"}'
 */
import { spawn } from "node:child_process";
import { create } from "@bufbuild/protobuf";
import { createContextValues, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import {
  createSuggestionClient,
  ListSuggestionsRequestSchema,
  ListSuggestionsResponseSchema,
  retryInterceptor,
  type SuggestionClient,
  SuggestionService,
} from "../sdk/src/node.js";
import { lastJsonLine } from "./measure.js";

const ROUNDS = Number(process.env.BENCH_RETRY_ROUNDS ?? 20);
const CALLS = Number(process.env.BENCH_RETRY_CALLS ?? 1_500);
const IN_FLIGHT = 8;

/** The figures: µs of client CPU per call, each round's and the medians. */
export interface RetryLayerResult {
  readonly rounds: number;
  readonly callsPerRound: number;
  readonly withRetryUs: number;
  readonly withoutRetryUs: number;
  /** The median of the rounds' ratios (with ÷ without). */
  readonly ratio: number;
  readonly roundsWithUs: readonly number[];
  readonly roundsWithoutUs: readonly number[];
  /** The retry interceptor's own CPU per call, in process, µs. */
  readonly layerUs: number;
}

/** The retry interceptor's own time per call around a `next` that answers at once, in µs. */
async function layerUs(calls = 200_000): Promise<number> {
  const response = {
    stream: false,
    message: create(ListSuggestionsResponseSchema),
  } as unknown as UnaryResponse;
  const next = (_req: UnaryRequest) => Promise.resolve(response);
  const wrapped = retryInterceptor()(next as never) as typeof next;
  const method = SuggestionService.method.listSuggestions;
  const request = {
    stream: false,
    service: SuggestionService,
    method,
    requestMethod: "POST",
    url: "http://127.0.0.1/",
    signal: new AbortController().signal,
    header: new Headers(),
    contextValues: createContextValues(),
    message: create(ListSuggestionsRequestSchema, { sessionId: "s" }),
  } as unknown as UnaryRequest;
  const time = async (call: typeof next) => {
    for (let i = 0; i < 20_000; i++) await call(request); // warm-up
    const began = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await call(request);
    return Number(process.hrtime.bigint() - began) / calls / 1_000;
  };
  let bare = Number.POSITIVE_INFINITY;
  let layered = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    bare = Math.min(bare, await time(next));
    layered = Math.min(layered, await time(wrapped));
  }
  return Math.max(0, layered - bare);
}

/** Client CPU per call, in µs, of `calls` calls with `IN_FLIGHT` at a time. */
async function round(client: SuggestionClient, sessionId: string, calls: number) {
  const before = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < calls) {
        next++;
        await client.listSuggestions({ sessionId });
      }
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

async function main(address: string, sessionId: string): Promise<void> {
  const baseUrl = `http://${address}`;
  const withRetry = createSuggestionClient({ baseUrl });
  const withoutRetry = createSuggestionClient({ baseUrl, retry: false });
  // Warm-up: connections made, code optimized.
  await round(withRetry, sessionId, CALLS);
  await round(withoutRetry, sessionId, CALLS);
  const roundsWith: number[] = [];
  const roundsWithout: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      roundsWith.push(await round(withRetry, sessionId, CALLS));
      roundsWithout.push(await round(withoutRetry, sessionId, CALLS));
    } else {
      roundsWithout.push(await round(withoutRetry, sessionId, CALLS));
      roundsWith.push(await round(withRetry, sessionId, CALLS));
    }
  }
  const withUs = median(roundsWith);
  const withoutUs = median(roundsWithout);
  const result: RetryLayerResult = {
    rounds: ROUNDS,
    callsPerRound: CALLS,
    withRetryUs: withUs,
    withoutRetryUs: withoutUs,
    ratio: median(roundsWith.map((w, i) => w / (roundsWithout[i] as number))),
    roundsWithUs: roundsWith.map((x) => Math.round(x * 10) / 10),
    roundsWithoutUs: roundsWithout.map((x) => Math.round(x * 10) / 10),
    layerUs: await layerUs(),
  };
  console.log(JSON.stringify(result));
  process.exit(0);
}

/** Runs this file as a process of its own against the service at `address`. */
export async function measureRetryLayer(
  address: string,
  sessionId: string,
): Promise<RetryLayerResult> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "bench/retry-layer.ts", JSON.stringify({ address, sessionId })],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let stdout = "";
  child.stdout?.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`retry-layer exited ${code}:\n${stdout.slice(-2_000)}`);
  return lastJsonLine<RetryLayerResult>(stdout);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { address, sessionId } = JSON.parse(process.argv[2] as string) as {
    address: string;
    sessionId: string;
  };
  void main(address, sessionId);
}
