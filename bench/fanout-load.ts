/**
 * One chat, many watchers: opens WATCHERS WatchSuggestions streams of one chat (a
 * `buildChat` chat of bench/history.ts) on the lean client, then makes CHANGES changes
 * of its `o9` one after another, straight in Redis as another instance would (dismiss,
 * restore, ...), each once every watcher has seen the one before. The first
 * WARMUP_CHANGES of them warm the server up, uncounted, as every other row's 2 s warm-up
 * does (in their first changes the service's path per message is not compiled yet, and
 * 30 counted changes were 1.3× to 1.6× the floor where 200 were 1.05×). It prints
 * `fanout-start` and `fanout-end` around the counted changes (the runner reads the
 * server's CPU then) and one JSON line: messages delivered in between, and how long
 * each change took to reach every watcher.
 *
 *   node --import tsx bench/fanout-load.ts '<json: { address, redisUrl, sessionId, watchers, changes }>'
 */
import { fromBinary } from "@bufbuild/protobuf";
import {
  WatchSuggestionsRequestSchema,
  WatchSuggestionsResponseSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { requestFrame, WATCH_SUGGESTIONS_PATH } from "./grpc-frames.js";
import { connectAll, streamCall } from "./h2-client.js";
import { median } from "./stats.js";

/** Changes made before the counted ones, uncounted (the same for the service and its floor). */
const WARMUP_CHANGES = 20;

/** What the process prints last. */
export interface FanoutResult {
  readonly watchers: number;
  readonly changes: number;
  readonly deliveredMessages: number;
  readonly medianDeliveryMs: number;
  readonly maxDeliveryMs: number;
}

interface Watcher {
  /** Whether o9 was open in the last lists this watcher got. */
  o9Open: boolean | undefined;
  messages: number;
}

/**
 * How many watchers have had lists at all, and how many saw o9 open and closed in their
 * last ones: kept as each message comes, so that asking whether a change reached every
 * watcher costs nothing (a scan of all the watchers on every message was half a million steps
 * a change, and made the generator, not the server, the limit of this figure).
 */
interface Tally {
  seen: number;
  open: number;
  closed: number;
}

/** Streams per connection: the service takes up to 1,000 on one. */
const PER_CONNECTION = 250;

/**
 * Opens the watchers, each on its own stream; `onMessage` hears every message of any.
 * The server sends every watcher of a change the same bytes, so each distinct message is
 * decoded once, not once per watcher: the generator's cost per message is a comparison.
 */
async function openWatchers(
  address: string,
  sessionId: string,
  count: number,
  onMessage: () => void,
): Promise<{ watchers: Watcher[]; tally: Tally; cancel: () => void }> {
  const body = requestFrame(WatchSuggestionsRequestSchema, { sessionId });
  const connections = await connectAll(address, Math.ceil(count / PER_CONNECTION));
  const watchers: Watcher[] = [];
  const tally: Tally = { seen: 0, open: 0, closed: 0 };
  let lastBytes: Buffer | undefined;
  let lastOpen = false;
  const o9OpenIn = (message: Buffer): boolean => {
    if (lastBytes === undefined || !message.equals(lastBytes)) {
      const lists = fromBinary(WatchSuggestionsResponseSchema, message);
      lastOpen = lists.open.some((s) => s.id === "o9");
      lastBytes = Buffer.from(message);
    }
    return lastOpen;
  };
  const streams = Array.from({ length: count }, (_, i) => {
    const watcher: Watcher = { o9Open: undefined, messages: 0 };
    watchers.push(watcher);
    const session = connections[Math.floor(i / PER_CONNECTION)];
    if (session === undefined) throw new Error("no connection");
    return streamCall(session, WATCH_SUGGESTIONS_PATH, body, (message) => {
      const open = o9OpenIn(message);
      if (watcher.messages++ === 0) tally.seen++;
      if (watcher.o9Open !== open) {
        if (watcher.o9Open !== undefined) tally[watcher.o9Open ? "open" : "closed"]--;
        tally[open ? "open" : "closed"]++;
        watcher.o9Open = open;
      }
      onMessage();
    });
  });
  const cancel = () => {
    for (const s of streams) s.cancel();
  };
  return { watchers, tally, cancel };
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] as string) as {
    address: string;
    redisUrl: string;
    sessionId: string;
    watchers: number;
    changes: number;
  };
  let onMessage = () => {};
  const { watchers, tally, cancel } = await openWatchers(
    config.address,
    config.sessionId,
    config.watchers,
    () => onMessage(),
  );
  const until = (done: () => boolean, what: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), 20_000);
      onMessage = () => {
        if (!done()) return;
        clearTimeout(timer);
        resolve();
      };
      onMessage();
    });
  const all = watchers.length;
  await until(() => tally.seen === all, "first lists of every watcher");
  await new Promise((r) => setTimeout(r, 500));
  const store = new SuggestionStore(createRedisClient(config.redisUrl));
  const messages = () => watchers.reduce((n, w) => n + w.messages, 0);
  const delivery: number[] = [];
  const change = async (k: number) => {
    const open = !(watchers[0]?.o9Open ?? true);
    const began = performance.now();
    const settled = await store.settle(config.sessionId, "o9", open ? "restored" : "dismissed");
    if (settled.kind !== "recorded") throw new Error(`change ${k} answered ${settled.kind}`);
    await until(() => tally[open ? "open" : "closed"] === all, `change ${k} to every watcher`);
    return performance.now() - began;
  };
  for (let k = 0; k < WARMUP_CHANGES; k++) await change(k);
  const before = messages();
  console.log("fanout-start");
  for (let k = 0; k < config.changes; k++) delivery.push(await change(WARMUP_CHANGES + k));
  console.log("fanout-end");
  const delivered = messages() - before;
  cancel();
  const result: FanoutResult = {
    watchers: config.watchers,
    changes: config.changes,
    deliveredMessages: delivered,
    medianDeliveryMs: median(delivery),
    maxDeliveryMs: Math.max(...delivery),
  };
  console.log(JSON.stringify(result));
  process.exit(0);
}

void main();
