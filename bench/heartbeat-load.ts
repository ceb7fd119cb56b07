/**
 * Idle watchers with or without heartbeats, in a process of their own: opens `watchers`
 * WatchSuggestions streams over 20 connections (500 at a time, each batch awaiting its first
 * lists), spread over `sessions`, each asking for `heartbeatSeconds` (0: none). Prints
 * `watching`, lets the service settle, then `window-start`, holds the streams idle for
 * `windowMs` while counting the heartbeats that arrive, and prints `window-end` and one JSON
 * line: watchers, heartbeats in the window, failed streams.
 *
 *   node --import tsx bench/heartbeat-load.ts '<json>'
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  WatchSuggestionsRequestSchema,
  WatchSuggestionsResponseSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { WATCH_SUGGESTIONS_PATH } from "./grpc-frames.js";

/** What the generator is run with. */
export interface HeartbeatLoadConfig {
  readonly address: string;
  readonly watchers: number;
  readonly sessions: readonly string[];
  readonly heartbeatSeconds: number;
  readonly windowMs: number;
}

/** What it prints last. */
export interface HeartbeatLoadResult {
  readonly watchers: number;
  readonly heartbeatSeconds: number;
  readonly windowMs: number;
  readonly heartbeatsInWindow: number;
  readonly failed: number;
  readonly firstError: string | undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(config: HeartbeatLoadConfig): Promise<void> {
  const clients = Array.from(
    { length: 20 },
    () =>
      new grpc.Client(config.address, grpc.credentials.createInsecure(), {
        "grpc.use_local_subchannel_pool": 1,
      }),
  );
  let started = 0;
  let failed = 0;
  let firstError: string | undefined;
  let counting = false;
  let heartbeats = 0;
  const streams: grpc.ClientReadableStream<unknown>[] = [];
  const request = (m: unknown) =>
    Buffer.from(
      toBinary(WatchSuggestionsRequestSchema, create(WatchSuggestionsRequestSchema, m as never)),
    );
  const response = (b: Buffer) => fromBinary(WatchSuggestionsResponseSchema, b);
  for (let i = 0; i < config.watchers; i++) {
    const sessionId = config.sessions[i % config.sessions.length] as string;
    const stream = (clients[i % clients.length] as grpc.Client).makeServerStreamRequest(
      WATCH_SUGGESTIONS_PATH,
      request,
      response,
      { sessionId, heartbeatSeconds: config.heartbeatSeconds },
    );
    let first = true;
    stream.on("data", (m: ReturnType<typeof response>) => {
      if (first) {
        first = false;
        started++;
      } else if (m.heartbeat && counting) heartbeats++;
    });
    stream.on("error", (err: Error) => {
      failed++;
      firstError ??= err.message;
    });
    streams.push(stream);
    if ((i + 1) % 500 === 0) {
      while (started + failed < i + 1) await sleep(20);
    }
  }
  while (started + failed < config.watchers) await sleep(50);
  console.log("watching");
  // Opening 10,000 streams leaves garbage and timers behind; the window starts after them.
  await sleep(3_000);
  counting = true;
  console.log("window-start");
  await sleep(config.windowMs);
  console.log("window-end");
  counting = false;
  const result: HeartbeatLoadResult = {
    watchers: config.watchers,
    heartbeatSeconds: config.heartbeatSeconds,
    windowMs: config.windowMs,
    heartbeatsInWindow: heartbeats,
    failed,
    firstError,
  };
  console.log(JSON.stringify(result));
  for (const s of streams) s.cancel();
  for (const c of clients) c.close();
  process.exit(0);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  void main(JSON.parse(process.argv[2] as string) as HeartbeatLoadConfig);
}
