import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { afterAll, expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestionLists } from "../../server/domain/fold.js";
import { type CallHook, wrapService } from "../../server/pipeline/call-pipeline.js";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import { watchedStream } from "../../server/rpc/watched-stream.js";
import { PubSub } from "../../server/store/pubsub.js";
import type { PushSink, PushSource } from "../../server/store/push-source.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { shuttingDown, WatchHub } from "../../server/store/watch-hub.js";
import { Watcher } from "../../server/store/watcher.js";
import { eventually, sharedRedisUrl, uniqueId } from "../support/harness.js";
import { appendOffers, ids } from "../support/lists.js";

/*
 * Watches pushed (server/store/push-source.ts), as the gRPC fast path reads them: the
 * hub's watcher on Redis hands each change's lists to its sink within the hub's loop,
 * pauses when the sink asks and then keeps only the newest lists; the Watch handler's
 * stream and the call pipeline pass pushes through and end the call as they do when
 * read as iterators (test/rpc/watched-stream.test.ts, test/pipeline/call-pipeline.test.ts).
 */

const client = createRedisClient(sharedRedisUrl());
afterAll(() => client.disconnect());

/** A sink that records what it is pushed and told; `accept` is what push answers. */
function recordingSink<T>() {
  const sink = {
    got: [] as T[],
    ends: [] as unknown[],
    accept: true,
    push(value: T) {
      sink.got.push(value);
      return sink.accept;
    },
    end(error?: unknown) {
      sink.ends.push(error);
    },
  };
  return sink satisfies PushSink<T>;
}

/** Bare offers appended to the session's log. */
function offered(sessionId: string, ...offerIds: string[]): Promise<void> {
  return appendOffers(client, sessionId, ...offerIds);
}

function hubOn() {
  const store = new SuggestionStore(client);
  const pubsub = new PubSub(() => subscriberConnection(client));
  const hub = new WatchHub(store, pubsub);
  return {
    store,
    hub,
    close: async () => {
      await hub.close();
      await pubsub.close();
    },
  };
}

test("pushed: the lists at once, then each change; a paused sink gets only the newest lists when it resumes", async () => {
  const { store, hub, close } = hubOn();
  const sessionId = uniqueId();
  await offered(sessionId, "a", "b");
  const paused = recordingSink<SuggestionLists>();
  const steady = recordingSink<SuggestionLists>();
  const pausedPush = hub.watch(sessionId, new AbortController().signal).pushTo(paused);
  const steadyAbort = new AbortController();
  hub.watch(sessionId, steadyAbort.signal).pushTo(steady);
  await eventually(async () => paused.got.length === 1 && steady.got.length === 1);
  expect(ids(paused.got[0]?.open ?? [])).toEqual(["b", "a"]);

  // The push that answers false is delivered; what comes after waits, the newest only.
  paused.accept = false;
  await store.settle(sessionId, "a", "dismissed");
  await eventually(async () => paused.got.length === 2 && steady.got.length === 2);
  await store.settle(sessionId, "b", "drafted");
  await store.settle(sessionId, "a", "restored");
  const final = await store.lists(sessionId);
  await eventually(async () => ids(steady.got.at(-1)?.open ?? []).join() === "a");
  expect(paused.got).toHaveLength(2);
  paused.accept = true;
  pausedPush.resume();
  expect(paused.got).toHaveLength(3);
  expect(paused.got[2]).toEqual(final);

  // Stopped by its reader: it leaves, its sink is not told. The client leaving: told once, OK.
  pausedPush.stop();
  expect(paused.ends).toEqual([]);
  expect(hub.watchedSessions).toBe(1);
  steadyAbort.abort(new ConnectError("the client left", Code.Canceled));
  expect(steady.ends).toEqual([undefined]);
  expect(hub.watchedSessions).toBe(0);
  await close();
});

test("a sink that throws fails its own watch only; the hub closing fails the others UNAVAILABLE", async () => {
  const { store, hub, close } = hubOn();
  const sessionId = uniqueId();
  await offered(sessionId, "a");
  const broken = new Error("the sink broke");
  const throwing = recordingSink<SuggestionLists>();
  const other = recordingSink<SuggestionLists>();
  hub.watch(sessionId, new AbortController().signal).pushTo({
    push: (lists) => {
      throwing.push(lists);
      if (throwing.got.length === 2) throw broken;
      return true;
    },
    end: (error) => throwing.end(error),
  });
  hub.watch(sessionId, new AbortController().signal).pushTo(other);
  await eventually(async () => throwing.got.length === 1 && other.got.length === 1);
  await store.settle(sessionId, "a", "dismissed");
  await eventually(async () => other.got.length === 2);
  expect(throwing.ends).toEqual([broken]);
  await store.settle(sessionId, "a", "restored");
  await eventually(async () => other.got.length === 3);
  expect(throwing.got).toHaveLength(2);
  await close();
  expect(other.ends).toEqual([shuttingDown()]);
});

test("a watch that failed or ended before it is pushed tells its sink at once", () => {
  const failedFirst = new Watcher<string>();
  const gone = new Error("Redis is gone");
  failedFirst.fail(gone);
  const told = recordingSink<string>();
  failedFirst.pushTo(told);
  expect(told.ends).toEqual([gone]);

  const endedFirst = new Watcher<string>();
  endedFirst.end();
  const ended = recordingSink<string>();
  endedFirst.pushTo(ended);
  expect(ended.ends).toEqual([undefined]);

  const waiting = new Watcher<string>();
  waiting.offer({ version: "1", value: "one" });
  const late = recordingSink<string>();
  waiting.pushTo(late);
  expect(late.got).toEqual(["one"]);
});

test("a sink that resumes within its push is not left paused; one whose end throws harms no other watch", async () => {
  const waiting = new Watcher<string>();
  const got: string[] = [];
  const steering = waiting.pushTo({
    push: (value) => {
      got.push(value as string);
      steering?.resume();
      return false;
    },
    end: () => {},
  });
  waiting.offer({ version: "1", value: "one" });
  waiting.offer({ version: "2", value: "two" });
  expect(got).toEqual(["one", "two"]);

  const { store, hub, close } = hubOn();
  const sessionId = uniqueId();
  await offered(sessionId, "a");
  const brokenEnd = {
    push: () => true,
    end: () => {
      throw new Error("the end broke");
    },
  };
  const left = new AbortController();
  hub.watch(sessionId, left.signal).pushTo(brokenEnd);
  // Ended first by the hub's close, below: the others are ended all the same.
  hub.watch(sessionId, new AbortController().signal).pushTo(brokenEnd);
  const other = recordingSink<SuggestionLists>();
  hub.watch(sessionId, new AbortController().signal).pushTo(other);
  const third = recordingSink<SuggestionLists>();
  hub.watch(sessionId, new AbortController().signal).pushTo(third);
  await eventually(async () => other.got.length === 1);
  // Told within the abort listener: a throw there would reach the process.
  left.abort(new ConnectError("the client left", Code.Canceled));
  await store.settle(sessionId, "a", "dismissed");
  await eventually(async () => other.got.length === 2 && third.got.length === 2);
  await close();
  expect(other.ends).toEqual([shuttingDown()]);
  expect(third.ends).toEqual([shuttingDown()]);
});

test("the Watch handler's stream pushed: responses, then OK, the deadline's error, or UNAVAILABLE", () => {
  const respond = (value: string) => ({ value });
  const deadline = new AbortController();
  const watcher = new Watcher<string>();
  const sink = recordingSink<{ value: string }>();
  watchedStream(watcher, respond, deadline.signal).pushTo(sink);
  watcher.offer({ version: "1", value: "one" });
  expect(sink.got).toEqual([{ value: "one" }]);
  const reason = new ConnectError("the deadline passed", Code.DeadlineExceeded);
  deadline.abort(reason);
  watcher.end();
  expect(sink.ends).toEqual([reason]);

  const failing = new Watcher<string>();
  const down = recordingSink<{ value: string }>();
  watchedStream(failing, respond, new AbortController().signal).pushTo(down);
  failing.fail(new Error("Redis is gone"));
  expect(down.ends).toHaveLength(1);
  expect(ConnectError.from(down.ends[0]).code).toBe(Code.Unavailable);
  expect(ConnectError.from(down.ends[0]).rawMessage).toBe("the suggestion store is unavailable");

  // A response that cannot be made: UNAVAILABLE once, and the watch leaves its channel.
  let left = 0;
  const unanswerable = new Watcher<string>(() => left++);
  const refused = recordingSink<unknown>();
  watchedStream(
    unanswerable,
    () => {
      throw new Error("no response");
    },
    new AbortController().signal,
  ).pushTo(refused);
  unanswerable.offer({ version: "1", value: "one" });
  expect(refused.got).toEqual([]);
  expect(refused.ends).toHaveLength(1);
  expect(ConnectError.from(refused.ends[0]).code).toBe(Code.Unavailable);
  expect(left).toBe(1);

  // A source that cannot push: the stream says so, and is read as an iterator instead.
  const plain: AsyncIterator<string> = {
    next: () => Promise.resolve({ done: true, value: undefined }),
  };
  expect(watchedStream(plain, respond, new AbortController().signal).pushTo(sink)).toBe(undefined);
});

/** A hook that records what it saw, in order. */
function recorder(refuse?: ConnectError) {
  const seen: string[] = [];
  const hook: CallHook = {
    before: () => {
      seen.push("before");
      if (refuse !== undefined) throw refuse;
    },
    after: (_call, error) => {
      seen.push(`after ${error === undefined ? "ok" : Code[error.code]}`);
    },
  };
  return { seen, hook };
}

/** WatchSuggestions wrapped by the pipeline, its handler `body`. */
function wrapped(hook: CallHook, body: () => AsyncIterable<unknown>, signal: AbortSignal) {
  const impl = { watchSuggestions: body } as never;
  const service = wrapService(SuggestionService, impl, {
    hooks: [hook],
    defaultDeadlineMs: 1_000,
    maxDeadlineMs: 1_000,
  }) as unknown as {
    watchSuggestions: (
      request: unknown,
      context: HandlerContext,
    ) => AsyncIterableIterator<unknown> & PushSource<unknown>;
  };
  return service.watchSuggestions({}, { signal } as HandlerContext);
}

test("the pipeline pushed: before at pushTo, after once at the end, CANCELED when the client left", () => {
  const { seen, hook } = recorder();
  const watcher = new Watcher<string>();
  const sink = recordingSink<unknown>();
  const stream = wrapped(hook, () => watcher, new AbortController().signal);
  expect(seen).toEqual([]);
  const pushing = stream.pushTo(sink);
  expect(seen).toEqual(["before"]);
  watcher.offer({ version: "1", value: "one" });
  expect(sink.got).toEqual(["one"]);
  watcher.fail(new ConnectError("the suggestion store is unavailable", Code.Unavailable));
  expect(seen).toEqual(["before", "after Unavailable"]);
  expect(ConnectError.from(sink.ends[0]).code).toBe(Code.Unavailable);
  pushing?.stop();
  expect(seen).toHaveLength(2);

  // Stopped by the transport once the client left: the call ends CANCELED, the watch too.
  const left = recorder();
  const client = new AbortController();
  let watching = true;
  const stopped = wrapped(
    left.hook,
    () => new Watcher<string>(() => (watching = false)),
    client.signal,
  );
  const steering = stopped.pushTo(recordingSink());
  client.abort();
  steering?.stop();
  expect(watching).toBe(false);
  expect(left.seen).toEqual(["before", "after Canceled"]);
});

test("the pipeline pushed: a refusal throws from pushTo, and a handler that cannot push is read instead", async () => {
  const refusal = new ConnectError("no credentials", Code.Unauthenticated);
  const refused = recorder(refusal);
  let ran = false;
  const stream = wrapped(
    refused.hook,
    () => {
      ran = true;
      return new Watcher<string>();
    },
    new AbortController().signal,
  );
  expect(() => stream.pushTo(recordingSink())).toThrow(refusal);
  expect(ran).toBe(false);
  expect(refused.seen).toEqual(["before", "after Unauthenticated"]);

  const { seen, hook } = recorder();
  const generated = wrapped(
    hook,
    async function* () {
      yield "a";
      yield "b";
    },
    new AbortController().signal,
  );
  expect(generated.pushTo(recordingSink())).toBeUndefined();
  const read: unknown[] = [];
  for await (const value of generated) read.push(value);
  expect(read).toEqual(["a", "b"]);
  expect(seen).toEqual(["before", "after ok"]);
});
