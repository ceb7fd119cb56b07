import { getEventListeners } from "node:events";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { withinBudget } from "../../server/pipeline/deadlines.js";

/** A caller's context with no deadline of its own. */
function callerContext(): HandlerContext {
  const signal = new AbortController().signal;
  return { signal, timeoutMs: () => undefined } as unknown as HandlerContext;
}

const budget = { defaultDeadlineMs: 200, maxDeadlineMs: 1_000 };

/** Timers the process holds now: a budget left running after its call would show here. */
const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

test("the work's result or failure is the call's, and no budget timer is left behind", async () => {
  const before = timers();
  await expect(withinBudget(callerContext(), budget, async () => "answer")).resolves.toBe("answer");
  // A handler may answer a value, or throw before it returns a promise.
  const value = (() => "plain") as unknown as () => Promise<string>;
  await expect(withinBudget(callerContext(), budget, value)).resolves.toBe("plain");
  const thrown = () => {
    throw new ConnectError("refused", Code.FailedPrecondition);
  };
  await expect(withinBudget(callerContext(), budget, thrown)).rejects.toThrow("refused");
  await expect(
    withinBudget(callerContext(), budget, () => Promise.reject(new Error("lost"))),
  ).rejects.toThrow("lost");
  // Even a rejection without a reason stays a rejection.
  await expect(
    withinBudget(callerContext(), budget, () => Promise.reject(undefined)),
  ).rejects.toBeUndefined();
  expect(timers()).toBe(before);
});

test("work past the budget ends with DEADLINE_EXCEEDED and its signal aborts", async () => {
  let seen: AbortSignal | undefined;
  const began = Date.now();
  const call = withinBudget(callerContext(), budget, (context) => {
    seen = context.signal;
    return new Promise<string>(() => {});
  });
  await expect(call).rejects.toMatchObject({
    code: Code.DeadlineExceeded,
    rawMessage: "the call ran past its deadline",
  });
  expect(Date.now() - began).toBeGreaterThanOrEqual(190);
  expect(seen?.aborted).toBe(true);
  expect(seen?.reason).toMatchObject({ code: Code.DeadlineExceeded });
});

test("the budget's context tells its end without a signal: the budget's, or the caller's", async () => {
  type Ends = { onEnd(listener: (reason: unknown) => void): () => void };
  const reasons: unknown[] = [];
  let ends: Ends | undefined;
  const call = withinBudget(callerContext(), budget, (context) => {
    ends = context as unknown as Ends;
    ends.onEnd((reason) => reasons.push(reason));
    return new Promise<string>(() => {});
  });
  await expect(call).rejects.toMatchObject({ code: Code.DeadlineExceeded });
  expect(reasons).toHaveLength(1);
  expect(reasons[0]).toMatchObject({
    code: Code.DeadlineExceeded,
    rawMessage: "the call ran past its deadline",
  });
  // Past the budget, a listener is told at once.
  const late: unknown[] = [];
  ends?.onEnd((reason) => late.push(reason));
  expect(late).toMatchObject([{ code: Code.DeadlineExceeded }]);

  // The caller's own end (a context of connect-node's: its signal) reaches the listener too.
  const caller = new AbortController();
  const inner = { signal: caller.signal, timeoutMs: () => undefined } as unknown as HandlerContext;
  const told: unknown[] = [];
  const dropped: unknown[] = [];
  const before = timers();
  const leaving = withinBudget(inner, budget, (context) => {
    const own = context as unknown as Ends;
    own.onEnd((reason) => dropped.push(reason))();
    own.onEnd((reason) => told.push(reason));
    caller.abort(new ConnectError("the client left", Code.Canceled));
    return Promise.resolve("answered");
  });
  await expect(leaving).resolves.toBe("answered");
  expect(told).toMatchObject([{ code: Code.Canceled, rawMessage: "the client left" }]);
  expect(dropped).toEqual([]);
  expect(timers()).toBe(before);
});

test("the budget's end and the caller's tell a listener once, whichever comes first", async () => {
  type Ends = { onEnd(listener: (reason: unknown) => void): () => void };
  const caller = new AbortController();
  const inner = { signal: caller.signal, timeoutMs: () => undefined } as unknown as HandlerContext;
  const told: unknown[] = [];
  const call = withinBudget(inner, budget, (context) => {
    (context as unknown as Ends).onEnd((reason) => told.push(reason));
    return new Promise<string>(() => {});
  });
  await expect(call).rejects.toMatchObject({ code: Code.DeadlineExceeded });
  // Past the budget: the caller's own end comes too, and is not told again.
  caller.abort(new ConnectError("the client left", Code.Canceled));
  expect(told).toMatchObject([{ code: Code.DeadlineExceeded }]);
  expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
});
