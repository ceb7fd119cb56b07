import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { type CallEnd, signalEnd } from "../../server/rpc/call-end.js";
import { Flights } from "../../server/rpc/start-flights.js";

/** A promise and its resolver. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

test("overlapping calls of one key run once and share the answer; later ones run again", async () => {
  const flights = new Flights<string>();
  let runs = 0;
  const gate = deferred<string>();
  const fn = () => {
    runs++;
    return gate.promise;
  };
  const calls = Array.from({ length: 50 }, () => flights.join("s\nx", fn));
  const other = flights.join("s\ny", async () => "other");
  expect(flights.size).toBe(2);
  gate.resolve("chat-1");
  expect(await Promise.all(calls)).toEqual(Array(50).fill("chat-1"));
  expect(await other).toBe("other");
  expect(runs).toBe(1);
  expect(flights.size).toBe(0);
  await flights.join("s\nx", async () => {
    runs++;
    return "again";
  });
  expect(runs).toBe(2);
});

test("a joining caller that leaves stops waiting alone; the flight answers the others", async () => {
  const flights = new Flights<string>();
  const gate = deferred<string>();
  // A call's end is read only by callers that join a flight in the air: the one that
  // starts it awaits its own work, which its call's deadline bounds.
  let made = 0;
  const signalOf = (controller: AbortController) => () => {
    made++;
    return signalEnd(controller.signal);
  };
  const first = flights.join("k", () => gate.promise, signalOf(new AbortController()));
  const leaving = new AbortController();
  const left = flights.join("k", () => Promise.resolve("never run"), signalOf(leaving));
  const staying = flights.join(
    "k",
    () => Promise.resolve("never run"),
    signalOf(new AbortController()),
  );
  expect(made).toBe(2);
  leaving.abort();
  const err = await left.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ConnectError);
  expect((err as ConnectError).code).toBe(Code.Canceled);
  gate.resolve("chat-1");
  expect(await first).toBe("chat-1");
  expect(await staying).toBe("chat-1");
});

test("a failure is every joined caller's, and the key is free again", async () => {
  const flights = new Flights<string>();
  const failing = () => Promise.reject(new Error("host down"));
  const both = [flights.join("k", failing), flights.join("k", failing)];
  for (const call of both) await expect(call).rejects.toThrow("host down");
  expect(flights.size).toBe(0);
});

test("a caller's end is dropped as soon as it comes or the flight lands, whichever is first", async () => {
  const flights = new Flights<string>();
  const gate = deferred<string>();
  let listening = 0;
  const tell: ((reason: unknown) => void)[] = [];
  const end = (): CallEnd => ({
    onEnd(listener) {
      listening++;
      tell.push(listener);
      return () => {
        listening--;
      };
    },
  });
  const ended = {
    onEnd: (listener: (reason: unknown) => void) => {
      // An end that came before the caller joined: told at once.
      listener(new ConnectError("the client left", Code.Canceled));
      listening++;
      return () => {
        listening--;
      };
    },
  };
  const first = flights.join("k", () => gate.promise);
  const leaving = flights.join("k", () => Promise.resolve("never run"), end);
  const staying = flights.join("k", () => Promise.resolve("never run"), end);
  const gone = flights.join(
    "k",
    () => Promise.resolve("never run"),
    () => ended,
  );
  await expect(gone).rejects.toMatchObject({ code: Code.Canceled });
  expect(listening).toBe(2);
  tell[0]?.("not a ConnectError");
  await expect(leaving).rejects.toMatchObject({
    code: Code.Canceled,
    rawMessage: "the call was canceled",
  });
  expect(listening).toBe(1);
  gate.resolve("chat-1");
  expect(await first).toBe("chat-1");
  expect(await staying).toBe("chat-1");
  expect(listening).toBe(0);
});

test("a caller whose call has ended holds nothing of it while the flight goes on", async () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const flights = new Flights<string>();
  const gate = deferred<string>();
  const first = flights.join("k", () => gate.promise);
  // The caller's end (on the fast path, its whole context), reachable from nothing else.
  const joined = () => {
    let tell: ((reason: unknown) => void) | undefined;
    const end: CallEnd & { context: object } = {
      context: { stream: Buffer.alloc(1024) },
      onEnd(listener) {
        tell = listener;
        return () => {
          tell = undefined;
        };
      },
    };
    const call = flights.join(
      "k",
      () => Promise.resolve("never run"),
      () => end,
    );
    tell?.(new ConnectError("the client left", Code.Canceled));
    return { call, held: new WeakRef(end) };
  };
  const { call, held } = joined();
  await expect(call).rejects.toMatchObject({ code: Code.Canceled });
  for (let i = 0; i < 3 && held.deref() !== undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  expect(held.deref()).toBeUndefined();
  gate.resolve("chat-1");
  expect(await first).toBe("chat-1");
});
