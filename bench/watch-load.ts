/**
 * Idle watchers in a process of their own: opens WATCHERS WatchSuggestions streams over
 * 20 connections, spread evenly over the given chats, prints `watching` once every
 * stream has its first lists, then, while background offers flow to the other chats,
 * makes one offer to each measured chat in turn and times how long until every watcher
 * of that chat has seen it. Prints one JSON line with the delivery times.
 *
 *   node --import tsx bench/watch-load.ts '<json>'
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { AgentRole } from "../gen/oda/suggest/v1/suggestion_pb.js";
import {
  SuggestTaskRequestSchema,
  SuggestTaskResponseSchema,
  WatchSuggestionsRequestSchema,
  WatchSuggestionsResponseSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { WATCH_SUGGESTIONS_PATH } from "./grpc-frames.js";

interface Config {
  address: string;
  watchers: number;
  sessions: string[];
  measured: string[];
}

const config = JSON.parse(process.argv[2] as string) as Config;
const clients = Array.from(
  { length: Number(process.env.WATCH_CONNECTIONS ?? 20) },
  () =>
    new grpc.Client(config.address, grpc.credentials.createInsecure(), {
      "grpc.use_local_subchannel_pool": 1,
    }),
);
const watchersOf = new Map<string, { seen: Set<string> }[]>();
let started = 0;
let errors = 0;
let firstError: string | undefined;
const streams: grpc.ClientReadableStream<unknown>[] = [];

/** Opens watcher `i`. */
function openWatcher(i: number): void {
  const sessionId = config.sessions[i % config.sessions.length] as string;
  const watcher = { seen: new Set<string>() };
  const list = watchersOf.get(sessionId) ?? [];
  list.push(watcher);
  watchersOf.set(sessionId, list);
  const stream = (clients[i % clients.length] as grpc.Client).makeServerStreamRequest(
    WATCH_SUGGESTIONS_PATH,
    (m: unknown) =>
      Buffer.from(
        toBinary(WatchSuggestionsRequestSchema, create(WatchSuggestionsRequestSchema, m as never)),
      ),
    (b: Buffer) => fromBinary(WatchSuggestionsResponseSchema, b),
    { sessionId },
  );
  let first = true;
  stream.on(
    "data",
    (lists: ReturnType<typeof fromBinary<typeof WatchSuggestionsResponseSchema>>) => {
      if (first) {
        first = false;
        started++;
      }
      for (const s of lists.open) watcher.seen.add(s.id);
      onDelivery();
    },
  );
  stream.on("error", (err: Error) => {
    errors++;
    firstError ??= err.message;
  });
  streams.push(stream);
}

let onDelivery = () => {};

function offer(sessionId: string, turn: string): Promise<string> {
  return new Promise((resolve, reject) => {
    (clients[0] as grpc.Client).makeUnaryRequest(
      "/oda.suggest.v1.SuggestionService/SuggestTask",
      (m: unknown) =>
        Buffer.from(
          toBinary(SuggestTaskRequestSchema, create(SuggestTaskRequestSchema, m as never)),
        ),
      (b: Buffer) => fromBinary(SuggestTaskResponseSchema, b),
      {
        context: { sessionId, turnId: turn, role: AgentRole.TOP_LEVEL },
        args: { title: "Watched offer", tldr: "r", brief: "b" },
      },
      (err, res) => (err ? reject(err) : resolve(res?.suggestion?.id ?? "")),
    );
  });
}

async function main(): Promise<void> {
  const openedAt = performance.now();
  let lastReport = performance.now();
  // Idle watchers arrive over time, not in one burst: 500 at a time, each batch waiting
  // for its first lists (a burst of 10,000 stream openings stalls any Node server).
  for (let i = 0; i < config.watchers; i++) {
    openWatcher(i);
    if ((i + 1) % 500 === 0) {
      while (started + errors < i + 1) await new Promise((r) => setTimeout(r, 20));
    }
  }
  while (started + errors < config.watchers) {
    await new Promise((r) => setTimeout(r, 50));
    if (performance.now() - lastReport > 5_000) {
      lastReport = performance.now();
      console.error(
        `watch-load: ${started} of ${config.watchers} watchers have their first lists; ${errors} failed (${firstError ?? "-"})`,
      );
    }
  }
  if (errors > 0) throw new Error(`${errors} watchers failed: ${firstError}`);
  console.log(`watching ${((performance.now() - openedAt) / 1000).toFixed(1)}`);
  await new Promise((r) => setTimeout(r, 1_000));
  const background = config.sessions.filter((s) => !config.measured.includes(s));
  let turn = 0;
  let flowing = true;
  const flow = (async () => {
    while (flowing) {
      await offer(background[turn % background.length] as string, `bg-${turn++}`).catch(
        () => undefined,
      );
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const delivery: number[] = [];
  for (const sessionId of config.measured) {
    const watchers = watchersOf.get(sessionId) ?? [];
    const began = performance.now();
    const id = await offer(sessionId, "measured");
    await new Promise<void>((resolve) => {
      onDelivery = () => {
        if (watchers.every((w) => w.seen.has(id))) resolve();
      };
      onDelivery();
    });
    delivery.push(performance.now() - began);
  }
  flowing = false;
  await flow;
  delivery.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      watchers: config.watchers,
      measuredOffers: delivery.length,
      backgroundOffers: turn,
      medianDeliveryMs: delivery[Math.floor(delivery.length / 2)],
      maxDeliveryMs: delivery.at(-1),
    }),
  );
  for (const s of streams) s.cancel();
  for (const c of clients) c.close();
  process.exit(0);
}

void main();
