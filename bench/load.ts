/**
 * The lean load generator, in a process of its own, for calls that each need their own
 * body (h2load posts one body over and over): HTTP/2 frames written on a node:net socket
 * (bench/h2-frames.ts), every request encoded with protobuf-es before the warm-up
 * begins, a fixed number of connections and calls in flight on each, a warm-up, then a
 * fixed window. It prints `window-start` and
 * `window-end` the moment each happens (the runner reads the CPU of the server, of
 * Redis and of this process then) and, last, one JSON line with the window's results.
 * A window also ends when the prepared bodies run out; the result says when.
 *
 *   node --import tsx bench/load.ts <file holding a LoadConfig as JSON>
 */
import { readFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { AgentRole } from "../gen/oda/suggest/v1/suggestion_pb.js";
import {
  DismissSuggestionRequestSchema,
  DraftSuggestionRequestSchema,
  ListSuggestionsRequestSchema,
  RestoreSuggestionRequestSchema,
  StartSuggestionRequestSchema,
  SuggestTaskRequestSchema,
  SuggestTaskResponseSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { requestFrame } from "./grpc-frames.js";
import type { UnaryAnswer } from "./h2-client.js";
import { FramedGrpcConnection } from "./h2-frames.js";
import { changeOfO9 } from "./history.js";
import { latencyOf } from "./stats.js";

/** What one load run does. */
export interface LoadConfig {
  readonly address: string;
  /**
   * suggest-task: one SuggestTask per prepared (fresh) session; start: one Start per
   * prepared pair; settle: Dismiss, Restore, Draft in turn of each chat's open offer
   * `o0`; list-after-change: each slot on a chat of its own (bench/history.ts's
   * `buildChat`), a change of its `o9` written straight to Redis (as another instance
   * would), then one ListSuggestions, over and over; only the Lists are counted.
   * dismiss: each slot on a chat of its own holding one open offer `o0`: one
   * DismissSuggestion of it, then its restore written straight to Redis, over and over;
   * only the Dismisses are counted.
   */
  readonly scenario: "suggest-task" | "start" | "settle" | "list-after-change" | "dismiss";
  readonly connections: number;
  readonly inFlight: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly sessions: readonly string[];
  readonly pairs: readonly (readonly [string, string])[];
  readonly runId: string;
  /** list-after-change, dismiss: the Redis the changes are written to. */
  readonly redisUrl?: string;
}

/** What the window measured. */
export interface LoadResult {
  readonly calls: number;
  readonly errors: number;
  readonly callsPerSecond: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  /** The window's real length: shorter than asked when the prepared bodies ran out. */
  readonly windowMs: number;
  readonly exhausted: boolean;
  readonly firstError?: string;
}

/** One step of a slot: a measured call, or a change made straight in Redis (not counted). */
type Step =
  | {
      readonly path: string;
      readonly body: Buffer;
      readonly check?: (a: UnaryAnswer) => string | undefined;
    }
  | { readonly change: () => Promise<string | undefined> };

/** The next steps of a slot, in order; undefined once the prepared work is used up. */
type Source = (slot: number) => readonly Step[] | undefined;

const SERVICE = "/oda.suggest.v1.SuggestionService";

/** Hands out prepared chains one at a time, to whichever slot asks first. */
function queue(chains: readonly (readonly Step[])[]): Source {
  let next = 0;
  return () => chains[next++];
}

/**
 * A SuggestTask answer must carry the recorded offer (a refusal is also grpc-status 0):
 * its first field is the suggestion (tag 0x0a), the result text follows; decoded only
 * to say what came instead.
 */
function recordedOffer(answer: UnaryAnswer): string | undefined {
  if (answer.message[0] === 0x0a) return undefined;
  return `not recorded: ${fromBinary(SuggestTaskResponseSchema, answer.message).result}`;
}

function suggestTaskSource(config: LoadConfig): Source {
  const path = `${SERVICE}/SuggestTask`;
  return queue(
    config.sessions.map((sessionId, i) => [
      {
        path,
        check: recordedOffer,
        body: requestFrame(SuggestTaskRequestSchema, {
          context: {
            sessionId,
            turnId: `${config.runId}-t${i}`,
            role: AgentRole.TOP_LEVEL,
            toolCallId: `${config.runId}-c${i}`,
          },
          args: {
            title: "Add a retry to the uploader",
            tldr: "Uploads fail on flaky networks",
            brief: "Find where uploads fail and retry them with backoff.",
          },
        }),
      },
    ]),
  );
}

function startSource(config: LoadConfig): Source {
  const path = `${SERVICE}/StartSuggestion`;
  return queue(
    config.pairs.map(([sessionId, suggestionId]) => [
      { path, body: requestFrame(StartSuggestionRequestSchema, { sessionId, suggestionId }) },
    ]),
  );
}

function settleSource(config: LoadConfig): Source {
  return queue(
    config.sessions.map((sessionId) => {
      const ids = { sessionId, suggestionId: "o0" };
      return [
        {
          path: `${SERVICE}/DismissSuggestion`,
          body: requestFrame(DismissSuggestionRequestSchema, ids),
        },
        {
          path: `${SERVICE}/RestoreSuggestion`,
          body: requestFrame(RestoreSuggestionRequestSchema, ids),
        },
        {
          path: `${SERVICE}/DraftSuggestion`,
          body: requestFrame(DraftSuggestionRequestSchema, ids),
        },
      ];
    }),
  );
}

function listAfterChangeSource(config: LoadConfig): Source {
  if (config.redisUrl === undefined) throw new Error("list-after-change needs redisUrl");
  const store = new SuggestionStore(createRedisClient(config.redisUrl));
  const path = `${SERVICE}/ListSuggestions`;
  const bodies = config.sessions.map((sessionId) =>
    requestFrame(ListSuggestionsRequestSchema, { sessionId }),
  );
  const changes = config.sessions.map((sessionId) => changeOfO9(store, sessionId));
  return (slot) => {
    const chat = slot % config.sessions.length;
    return [
      { change: changes[chat] as () => Promise<string | undefined> },
      { path, body: bodies[chat] as Buffer },
    ];
  };
}

function dismissSource(config: LoadConfig): Source {
  if (config.redisUrl === undefined) throw new Error("dismiss needs redisUrl");
  const store = new SuggestionStore(createRedisClient(config.redisUrl));
  const path = `${SERVICE}/DismissSuggestion`;
  const chains = config.sessions.map((sessionId): readonly Step[] => [
    { path, body: requestFrame(DismissSuggestionRequestSchema, { sessionId, suggestionId: "o0" }) },
    {
      change: async () => {
        const settled = await store.settle(sessionId, "o0", "restored");
        return settled.kind === "recorded" ? undefined : `restore answered ${settled.kind}`;
      },
    },
  ]);
  return (slot) => chains[slot % chains.length];
}

function sourceOf(config: LoadConfig): Source {
  switch (config.scenario) {
    case "suggest-task":
      return suggestTaskSource(config);
    case "start":
      return startSource(config);
    case "settle":
      return settleSource(config);
    case "list-after-change":
      return listAfterChangeSource(config);
    case "dismiss":
      return dismissSource(config);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The state of a run, shared by its slots. */
interface Run {
  measuring: boolean;
  stopped: boolean;
  exhausted: boolean;
  readonly latencies: number[];
  errors: number;
  firstError: string | undefined;
}

/** One step of a slot; a call is counted (its latency, or its failure) while measuring. */
async function runStep(step: Step, session: FramedGrpcConnection, run: Run): Promise<void> {
  let error: string | undefined;
  if ("change" in step) {
    error = await step.change();
  } else {
    const began = performance.now();
    const answer = await session.call(step.path, step.body);
    error = answer.error ?? step.check?.(answer);
    if (error === undefined && run.measuring) run.latencies.push(performance.now() - began);
  }
  if (error !== undefined && run.measuring) {
    run.errors++;
    run.firstError ??= error;
  }
}

/** One slot: the source's chains in turn, until the run stops or the source is used up. */
async function runSlot(s: number, session: FramedGrpcConnection, source: Source, run: Run) {
  while (!run.stopped) {
    const chain = source(s);
    if (chain === undefined) {
      run.exhausted = true;
      return;
    }
    for (const step of chain) await runStep(step, session, run);
  }
}

/**
 * Runs connections × inFlight slots over `sessions` until the warm-up and the window
 * have passed or the source is used up, printing the window's marks; answers what the
 * window measured.
 */
async function drive(
  config: LoadConfig,
  source: Source,
  sessions: readonly FramedGrpcConnection[],
): Promise<LoadResult> {
  const run: Run = {
    measuring: false,
    stopped: false,
    exhausted: false,
    latencies: [],
    errors: 0,
    firstError: undefined,
  };
  const slots = Promise.all(
    Array.from({ length: config.connections * config.inFlight }, (_, s) =>
      runSlot(s, sessions[s % sessions.length] as FramedGrpcConnection, source, run),
    ),
  );
  await Promise.race([sleep(config.warmupMs), slots]);
  run.measuring = true;
  console.log("window-start");
  const began = performance.now();
  await Promise.race([sleep(config.windowMs), slots]);
  run.measuring = false;
  const windowMs = performance.now() - began;
  console.log("window-end");
  run.stopped = true;
  await slots;
  return {
    calls: run.latencies.length,
    errors: run.errors,
    callsPerSecond: run.latencies.length / (windowMs / 1_000),
    ...latencyOf(run.latencies),
    windowMs,
    exhausted: run.exhausted,
    ...(run.firstError === undefined ? {} : { firstError: run.firstError }),
  };
}

async function main(): Promise<void> {
  const config = JSON.parse(readFileSync(process.argv[2] as string, "utf8")) as LoadConfig;
  const source = sourceOf(config);
  const sessions = await FramedGrpcConnection.connectAll(config.address, config.connections);
  const result = await drive(config, source, sessions);
  for (const session of sessions) session.close();
  console.log(JSON.stringify(result));
  process.exit(0);
}

void main();
