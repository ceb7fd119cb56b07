import { Code, ConnectError } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { watchedStream } from "../../server/rpc/watched-stream.js";

/*
 * How both Watch handlers end (server/rpc/watched-stream.ts): each value of the hub's
 * watch as a response, then OK when the watch is done, the deadline's DEADLINE_EXCEEDED,
 * or UNAVAILABLE when the store failed under it. The source here is a plain iterator
 * standing for the hub's watch (test/rpc/watch.test.ts runs the hub itself on Redis).
 */

/** An iterator of `values`, then `end` (done, or a rejection); records `return` calls. */
function source<T>(values: T[], end?: unknown) {
  const state = { returned: 0 };
  let i = 0;
  const iterator: AsyncIterator<T> = {
    next: () => {
      if (i < values.length) return Promise.resolve({ done: false, value: values[i++] as T });
      return end === undefined
        ? Promise.resolve({ done: true, value: undefined })
        : Promise.reject(end);
    },
    return: () => {
      state.returned++;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { iterator, state };
}

async function drain<T>(stream: AsyncIterable<T>): Promise<{ got: T[]; error?: unknown }> {
  const got: T[] = [];
  try {
    for await (const value of stream) got.push(value);
    return { got };
  } catch (error) {
    return { got, error };
  }
}

test("each value as its response, in order, then done: the call ends OK", async () => {
  const { iterator } = source([1, 2, 3]);
  const stream = watchedStream(iterator, (n) => ({ n }), new AbortController().signal);
  expect(await drain(stream)).toEqual({ got: [{ n: 1 }, { n: 2 }, { n: 3 }] });
});

test("a watch the deadline ended: DEADLINE_EXCEEDED, the deadline's own error", async () => {
  const deadline = new AbortController();
  const reason = new ConnectError("the deadline passed", Code.DeadlineExceeded);
  deadline.abort(reason);
  const { iterator } = source(["a"]);
  const { got, error } = await drain(watchedStream(iterator, (s) => s, deadline.signal));
  expect(got).toEqual(["a"]);
  expect(error).toBe(reason);
});

test("a client that left (any other abort) ends it OK", async () => {
  const left = new AbortController();
  left.abort(new ConnectError("the client left", Code.Canceled));
  const { iterator } = source(["a"]);
  expect(await drain(watchedStream(iterator, (s) => s, left.signal))).toEqual({ got: ["a"] });
});

test("a store that fails under it: UNAVAILABLE naming the store; a ConnectError of the caller's passes as it is", async () => {
  const down = await drain(
    watchedStream(
      source(["a"], new Error("Redis is gone")).iterator,
      (s) => s,
      new AbortController().signal,
    ),
  );
  expect(down.got).toEqual(["a"]);
  expect(ConnectError.from(down.error).code).toBe(Code.Unavailable);
  expect(ConnectError.from(down.error).rawMessage).toBe("the suggestion store is unavailable");

  const refused = new ConnectError("the server is shutting down", Code.Unavailable);
  const bad = new ConnectError("session_id is empty", Code.InvalidArgument);
  const passed = await drain(
    watchedStream(source([], bad).iterator, (s) => s, new AbortController().signal),
  );
  expect(passed.error).toBe(bad);
  const shutdown = await drain(
    watchedStream(source([], refused).iterator, (s) => s, new AbortController().signal),
  );
  expect(ConnectError.from(shutdown.error).code).toBe(Code.Unavailable);
});

test("a response that cannot be made fails the call as the store's failure would, and ends the watch", async () => {
  const { iterator, state } = source([1, 2]);
  const failing = watchedStream(
    iterator,
    () => {
      throw new Error("no response");
    },
    new AbortController().signal,
  );
  const { got, error } = await drain(failing);
  expect(got).toEqual([]);
  expect(ConnectError.from(error).code).toBe(Code.Unavailable);
  expect(state.returned).toBe(1);
});

test("a reader that stops early returns the hub's watch, so the watcher leaves its channel", async () => {
  const { iterator, state } = source([1, 2, 3]);
  for await (const n of watchedStream(iterator, (v) => v, new AbortController().signal)) {
    expect(n).toBe(1);
    break;
  }
  expect(state.returned).toBe(1);
});
