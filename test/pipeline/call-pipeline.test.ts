import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { type CallHook, wrapService } from "../../server/pipeline/call-pipeline.js";

/*
 * The pipeline around a server stream (WatchSuggestions): the `before` hooks run when
 * the stream is first read, as a generator's body would, and `after` runs exactly once,
 * with how the stream ended, whether it finished, failed, was refused, was left by
 * its consumer or its consumer failed (a write to the client); a stream never read runs
 * nothing.
 */

/** A hook that records what it saw, in order. */
function recorder() {
  const seen: string[] = [];
  const hook: CallHook = {
    before: (call) => {
      seen.push(`before ${call.method.name}`);
    },
    after: (_call, error) => {
      seen.push(`after ${error === undefined ? "ok" : Code[error.code]}`);
    },
  };
  return { seen, hook };
}

/** A WatchSuggestions handler made of `body`, wrapped with `hooks`. */
function wrappedWatch(
  hooks: CallHook[],
  body: () => AsyncIterable<unknown>,
): (signal?: AbortSignal) => AsyncIterableIterator<unknown> {
  const impl = { watchSuggestions: body } as never;
  const wrapped = wrapService(SuggestionService, impl, {
    hooks,
    defaultDeadlineMs: 1_000,
    maxDeadlineMs: 1_000,
  }) as unknown as {
    watchSuggestions: (request: unknown, context: HandlerContext) => AsyncIterableIterator<unknown>;
  };
  return (signal = new AbortController().signal) =>
    wrapped.watchSuggestions({}, { signal } as HandlerContext);
}

/** A watch of 0, 1, 2, ... without end, whose handler records when its `finally` runs. */
function countingWatch(hooks: CallHook[], seen: string[]) {
  return wrappedWatch(hooks, async function* () {
    try {
      for (let i = 0; ; i++) yield i;
    } finally {
      seen.push("handler finally");
    }
  });
}

test("before at the first read, the messages in order, after once when the stream is done", async () => {
  const { seen, hook } = recorder();
  const watch = wrappedWatch([hook], async function* () {
    seen.push("handler");
    yield "a";
    yield "b";
  });
  const stream = watch();
  expect(seen).toEqual([]);
  const got: unknown[] = [];
  for await (const message of stream) got.push(message);
  expect(got).toEqual(["a", "b"]);
  expect(seen).toEqual(["before WatchSuggestions", "handler", "after ok"]);
  // Read again after its end: done, and no second `after`.
  const iterator = stream[Symbol.asyncIterator]();
  expect(await iterator.next()).toEqual({ done: true, value: undefined });
  expect(seen.filter((s) => s.startsWith("after"))).toHaveLength(1);
});

test("a handler that fails mid-stream: the consumer gets its error, after sees its code", async () => {
  const { seen, hook } = recorder();
  const watch = wrappedWatch([hook], async function* () {
    yield "a";
    throw new ConnectError("redis went away", Code.Unavailable);
  });
  const got: unknown[] = [];
  const failure = await (async () => {
    for await (const message of watch()) got.push(message);
  })().catch((err: unknown) => err);
  expect(got).toEqual(["a"]);
  expect(failure).toMatchObject({ code: Code.Unavailable, rawMessage: "redis went away" });
  expect(seen).toEqual(["before WatchSuggestions", "after Unavailable"]);
});

test("a consumer that stops early ends the handler (its finally runs) and after sees CANCELED once the client left", async () => {
  const { seen, hook } = recorder();
  const left = new AbortController();
  const watch = countingWatch([hook], seen);
  for await (const message of watch(left.signal)) {
    if (message === 2) {
      left.abort();
      break;
    }
  }
  expect(seen).toEqual(["before WatchSuggestions", "handler finally", "after Canceled"]);
});

test("a before hook that refuses: the first read rejects, the handler never runs, after sees the refusal", async () => {
  const { seen, hook } = recorder();
  const refuse: CallHook = {
    before: () => {
      throw new ConnectError("no token", Code.Unauthenticated);
    },
  };
  const watch = wrappedWatch([hook, refuse], async function* () {
    seen.push("handler");
    yield "a";
  });
  const iterator = watch()[Symbol.asyncIterator]();
  await expect(iterator.next()).rejects.toMatchObject({ code: Code.Unauthenticated });
  expect(seen).toEqual(["before WatchSuggestions", "after Unauthenticated"]);
  expect(await iterator.next()).toEqual({ done: true, value: undefined });
});

test("a reader that fails (connect-node, when a write to the client fails): the handler ends, after sees the error once, or CANCELED once the client left", async () => {
  for (const clientLeft of [false, true]) {
    const { seen, hook } = recorder();
    const left = new AbortController();
    const watch = countingWatch([hook], seen);
    const stream = watch(left.signal);
    expect(await stream.next()).toEqual({ done: false, value: 0 });
    if (clientLeft) left.abort();
    const writeFailed = new ConnectError("the stream was reset", Code.Internal);
    await expect(stream.throw?.(writeFailed)).rejects.toBe(writeFailed);
    await stream.return?.();
    expect(seen).toEqual([
      "before WatchSuggestions",
      "handler finally",
      clientLeft ? "after Canceled" : "after Internal",
    ]);
  }
});

test("a stream closed before its first read runs nothing: no hooks, no handler", async () => {
  const { seen, hook } = recorder();
  const watch = wrappedWatch([hook], async function* () {
    seen.push("handler");
    yield "a";
  });
  const stream = watch();
  expect(await stream.return?.()).toEqual({ done: true, value: undefined });
  expect(await stream.next()).toEqual({ done: true, value: undefined });
  expect(seen).toEqual([]);
});

test("a handler's stream whose read fails is closed (a watch leaves its channel), and after sees the failure", async () => {
  const { seen, hook } = recorder();
  const failing: AsyncIterableIterator<unknown> = {
    [Symbol.asyncIterator]() {
      return failing;
    },
    next: () => Promise.reject(new ConnectError("redis went away", Code.Unavailable)),
    return: () => {
      seen.push("handler closed");
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  const watch = wrappedWatch([hook], () => failing);
  await expect(watch().next()).rejects.toMatchObject({ code: Code.Unavailable });
  expect(seen).toEqual(["before WatchSuggestions", "handler closed", "after Unavailable"]);
});
