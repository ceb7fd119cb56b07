import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { callEndOf } from "../rpc/call-end.js";

/** How long the service works on one unary call. */
export interface WorkDeadlines {
  /** The budget of a unary call whose caller set no deadline, in ms. */
  readonly defaultDeadlineMs: number;
  /**
   * The most the service spends on one unary call, in ms (MAX_DEADLINE_MS), whatever
   * the caller's deadline: a longer one is accepted, and the work stops here.
   */
  readonly maxDeadlineMs: number;
}

/** The error a unary call ends with when the service's own budget for it runs out. */
function pastBudget(): ConnectError {
  return new ConnectError("the call ran past its deadline", Code.DeadlineExceeded);
}

/**
 * Runs a unary call's work within min(caller's deadline, `maxDeadlineMs`), or within
 * min(`defaultDeadlineMs`, `maxDeadlineMs`) when the caller set none. In gRPC the
 * deadline is the caller's budget: a server may stop its own work earlier, it never
 * refuses the call for it, so a 5-minute `grpc-timeout` is served and bounded here.
 *
 * When the caller's own deadline is the earlier one, the transport's context already
 * ends the call there and nothing is added. Otherwise the handler gets a context whose
 * `signal` also aborts at the budget (with DEADLINE_EXCEEDED, as a transport's deadline
 * does, so a Start waiting on a lock or a chat host stops) and whose `timeoutMs()`
 * says what is left of the budget; the call fails with DEADLINE_EXCEEDED then even if
 * the handler does not look. The signal is made only if the handler reads it.
 * Pinned by test/e2e/deadlines.test.ts.
 */
export function withinBudget<T>(
  context: HandlerContext,
  deadlines: WorkDeadlines,
  work: (context: HandlerContext) => Promise<T>,
): Promise<T> {
  const callerMs = context.timeoutMs();
  const budgetMs = Math.min(callerMs ?? deadlines.defaultDeadlineMs, deadlines.maxDeadlineMs);
  if (callerMs !== undefined && callerMs <= budgetMs) return work(context);
  const bounded = new BudgetContext(context, Date.now() + budgetMs);
  // One promise settled by whichever comes first, the work or the timer, which is
  // cleared either way: also when the handler answers a plain value or throws before it
  // returns a promise (test/pipeline/deadlines.test.ts). `Promise.resolve` of a promise
  // is that promise.
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(bounded.expire()), budgetMs);
    const done = (result: T) => {
      clearTimeout(timer);
      resolve(result);
    };
    const failed = (err: unknown) => {
      clearTimeout(timer);
      reject(err);
    };
    try {
      Promise.resolve(work(bounded)).then(done, failed);
    } catch (err) {
      failed(err);
    }
  });
}

/**
 * The caller's context with the service's budget: `timeoutMs()` counts down to it, and
 * `signal` (made when first read) aborts at it or with the caller's own signal. A class
 * of getters rather than a copy: a copy per call cost about 3 µs here.
 */
class BudgetContext implements HandlerContext {
  private controller: AbortController | undefined;
  private combined: AbortSignal | undefined;
  private endListeners: ((reason: unknown) => void)[] | undefined;
  private expired = false;
  constructor(
    private readonly inner: HandlerContext,
    private readonly until: number,
  ) {}
  /** The budget ran out: the signal aborts; answers the error the call ends with. */
  expire(): ConnectError {
    const error = pastBudget();
    this.expired = true;
    this.controller?.abort(error);
    // Each listener told takes itself out of the list.
    for (const listener of [...(this.endListeners ?? [])]) listener(error);
    return error;
  }
  /**
   * The call's end without a signal (server/rpc/call-end.ts): the budget's, or the
   * caller's context's, whichever comes first, told once.
   */
  onEnd(listener: (reason: unknown) => void): () => void {
    if (this.expired) {
      listener(pastBudget());
      return () => {};
    }
    let live = true;
    let dropInner: (() => void) | undefined;
    const tell = (reason: unknown) => {
      if (!live) return;
      drop();
      listener(reason);
    };
    const drop = () => {
      if (!live) return;
      live = false;
      const listeners = this.endListeners ?? [];
      const at = listeners.indexOf(tell);
      if (at >= 0) listeners.splice(at, 1);
      const inner = dropInner;
      dropInner = undefined;
      inner?.();
    };
    this.endListeners ??= [];
    this.endListeners.push(tell);
    const inner = callEndOf(this.inner).onEnd(tell);
    // The caller's context may have told it at once.
    if (live) dropInner = inner;
    else inner();
    return drop;
  }
  get signal(): AbortSignal {
    if (this.combined === undefined) {
      // Linked by hand rather than with AbortSignal.any, whose weak bookkeeping cost a
      // Start that waits on another's flight more than the rest of its call (Node 20).
      const controller = new AbortController();
      this.controller = controller;
      if (this.expired) controller.abort(pastBudget());
      const inner = this.inner.signal;
      if (inner.aborted) controller.abort(inner.reason);
      else inner.addEventListener("abort", () => controller.abort(inner.reason), { once: true });
      this.combined = controller.signal;
    }
    return this.combined;
  }
  readonly timeoutMs = (): number => this.until - Date.now();
  get method() {
    return this.inner.method;
  }
  get service() {
    return this.inner.service;
  }
  get requestMethod() {
    return this.inner.requestMethod;
  }
  get requestHeader() {
    return this.inner.requestHeader;
  }
  get responseHeader() {
    return this.inner.responseHeader;
  }
  get responseTrailer() {
    return this.inner.responseTrailer;
  }
  get protocolName() {
    return this.inner.protocolName;
  }
  get values() {
    return this.inner.values;
  }
  get url() {
    return this.inner.url;
  }
}
