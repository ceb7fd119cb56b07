/**
 * The load generator, in a process of its own: a gRPC client (@grpc/grpc-js) with a
 * fixed number of connections and calls in flight on each, a warm-up, then a fixed
 * window. It prints `window-start` and `window-end` the moment each happens (the runner
 * reads the server's CPU then) and, last, one JSON line with the window's results.
 *
 *   node --import tsx bench/load.ts <file holding a LoadConfig as JSON>
 */
import { readFileSync } from "node:fs";
import {
  create,
  type DescMessage,
  fromBinary,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
} from "../gen/grpc/health/v1/health_pb.js";
import { AgentRole } from "../gen/oda/suggest/v1/suggestion_pb.js";
import {
  ListSuggestionsRequestSchema,
  ListSuggestionsResponseSchema,
  StartSuggestionRequestSchema,
  StartSuggestionResponseSchema,
  SuggestTaskRequestSchema,
  SuggestTaskResponseSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";

/** What one load run does. */
export interface LoadConfig {
  readonly address: string;
  readonly scenario: "noop" | "suggest-task" | "list" | "start";
  readonly connections: number;
  readonly inFlight: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  /** Session ids prepared for the scenario (suggest-task: fresh sessions; list: chats). */
  readonly sessions: readonly string[];
  /** start: the (session, suggestion) pairs prepared, each started once. */
  readonly pairs: readonly (readonly [string, string])[];
  readonly runId: string;
}

/** What the window measured. */
export interface LoadResult {
  readonly calls: number;
  readonly errors: number;
  readonly callsPerSecond: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly firstError?: string;
}

interface Call {
  readonly path: string;
  readonly input: DescMessage;
  readonly output: DescMessage;
  readonly request: (i: number) => MessageInitShape<DescMessage>;
}

function scenarioCall(config: LoadConfig): Call {
  switch (config.scenario) {
    case "noop":
      return {
        path: "/grpc.health.v1.Health/Check",
        input: HealthCheckRequestSchema,
        output: HealthCheckResponseSchema,
        request: () => ({}),
      };
    case "suggest-task":
      // Each call a fresh session and turn: the full check-and-append every time.
      return {
        path: "/oda.suggest.v1.SuggestionService/SuggestTask",
        input: SuggestTaskRequestSchema,
        output: SuggestTaskResponseSchema,
        request: (i) => ({
          context: {
            sessionId: config.sessions[i % config.sessions.length] as string,
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
      };
    case "list":
      return {
        path: "/oda.suggest.v1.SuggestionService/ListSuggestions",
        input: ListSuggestionsRequestSchema,
        output: ListSuggestionsResponseSchema,
        request: (i) => ({ sessionId: config.sessions[i % config.sessions.length] as string }),
      };
    case "start":
      return {
        path: "/oda.suggest.v1.SuggestionService/StartSuggestion",
        input: StartSuggestionRequestSchema,
        output: StartSuggestionResponseSchema,
        request: (i) => {
          const [sessionId, suggestionId] = config.pairs[i % config.pairs.length] as [
            string,
            string,
          ];
          return { sessionId, suggestionId };
        },
      };
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function main(): Promise<void> {
  const config = JSON.parse(readFileSync(process.argv[2] as string, "utf8")) as LoadConfig;
  const call = scenarioCall(config);
  const serialize = (m: unknown) =>
    Buffer.from(toBinary(call.input, create(call.input, m as never)));
  const deserialize = (b: Buffer) => fromBinary(call.output, b);
  const clients = Array.from(
    { length: config.connections },
    () =>
      new grpc.Client(config.address, grpc.credentials.createInsecure(), {
        "grpc.use_local_subchannel_pool": 1,
      }),
  );
  let next = 0;
  let measuring = false;
  let stopped = false;
  let errors = 0;
  let firstError: string | undefined;
  const latencies: number[] = [];
  const one = (client: grpc.Client) =>
    new Promise<void>((resolve) => {
      const i = next++;
      const began = performance.now();
      client.makeUnaryRequest(call.path, serialize, deserialize, call.request(i), (err) => {
        if (measuring) {
          if (err) {
            errors++;
            firstError ??= err.message;
          } else latencies.push(performance.now() - began);
        }
        resolve();
      });
    });
  const loops = clients.flatMap((client) =>
    Array.from({ length: config.inFlight }, async () => {
      while (!stopped) await one(client);
    }),
  );
  await new Promise((r) => setTimeout(r, config.warmupMs));
  measuring = true;
  console.log("window-start");
  const began = performance.now();
  await new Promise((r) => setTimeout(r, config.windowMs));
  measuring = false;
  const seconds = (performance.now() - began) / 1000;
  console.log("window-end");
  stopped = true;
  await Promise.all(loops);
  for (const c of clients) c.close();
  latencies.sort((a, b) => a - b);
  const result: LoadResult = {
    calls: latencies.length,
    errors,
    callsPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p90Ms: percentile(latencies, 90),
    p99Ms: percentile(latencies, 99),
    ...(firstError === undefined ? {} : { firstError }),
  };
  console.log(JSON.stringify(result));
}

void main();
