import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";

/**
 * A call's end as a call that waits on work it does not own (a Start joining another's
 * flight) needs it: a listener told once why the call must stop (the client left, the
 * deadline or the service's budget passed, the server shuts down). The service's own
 * contexts (the fast path's, server/transport/lazy-handler-context.ts, and the budget's,
 * server/pipeline/deadlines.ts) answer it with plain listeners and a timer, with no
 * AbortSignal: two signals linked, as a waiting Start made them, cost it about 20 µs
 * here, most of what it spends beside the flight it joins (docs/performance.md, "Choices the
 * figures rest on"). Any other context (connect-node's own) answers it through its signal.
 */
export interface CallEnd {
  /**
   * Calls `listener` once, when the call ends (at once if it has); answers what drops
   * it. A listener is dropped when it is told, and when the call has answered.
   */
  onEnd(listener: (reason: unknown) => void): () => void;
}

/** The context's own `onEnd` when it has one, else one read from its signal. */
export function callEndOf(context: HandlerContext): CallEnd {
  return hasCallEnd(context) ? context : signalEnd(context.signal);
}

function hasCallEnd(context: object): context is CallEnd {
  return typeof (context as Partial<CallEnd>).onEnd === "function";
}

/** A call's end read from an AbortSignal: its abort, with the signal's reason. */
export function signalEnd(signal: AbortSignal): CallEnd {
  return {
    onEnd(listener) {
      if (signal.aborted) {
        listener(signal.reason);
        return () => {};
      }
      const abort = () => listener(signal.reason);
      signal.addEventListener("abort", abort, { once: true });
      return () => signal.removeEventListener("abort", abort);
    },
  };
}

/**
 * The promise, or the call's end, whichever is first: the end's reason when it is a
 * ConnectError, else CANCELED. The listener is dropped as soon as either comes, and no
 * closure that outlives it holds the end (the call's context): a caller that has left
 * holds nothing of its call while the promise goes on.
 */
export function untilEnd<T>(promise: Promise<T>, end: CallEnd): Promise<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const answer = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  let settled = false;
  let drop: (() => void) | undefined;
  /** True for the first of the two to come; drops the listener then. */
  const settle = (): boolean => {
    if (settled) return false;
    settled = true;
    const dropped = drop;
    drop = undefined;
    dropped?.();
    return true;
  };
  const dropEnd = end.onEnd((reason) => {
    if (!settle()) return;
    reject(
      reason instanceof ConnectError
        ? reason
        : new ConnectError("the call was canceled", Code.Canceled),
    );
  });
  // An end that had come already was told before its drop was known.
  if (settled) dropEnd();
  else drop = dropEnd;
  promise.then(
    (value) => {
      if (settle()) resolve(value);
    },
    (err: unknown) => {
      if (settle()) reject(err);
    },
  );
  return answer;
}
