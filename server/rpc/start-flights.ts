import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Concurrent calls of one key on this instance joined into one flight: the first runs
 * `fn`, the others wait for its promise, so 50 concurrent Starts of one suggestion read
 * the host and the store once, not 50 times (the Redis lock still makes one holder
 * across instances). The flight runs without any caller's signal, so one caller leaving
 * does not fail the others; each caller stops waiting when its own signal aborts.
 * Flights are forgotten as soon as they settle: memory holds only calls in flight.
 */
export class Flights<T> {
  readonly #flights = new Map<string, Promise<T>>();

  /** Keys in flight now (for tests). */
  get size(): number {
    return this.#flights.size;
  }

  /**
   * `fn`'s result, shared with every call of `key` that overlaps this one. `signal` (or
   * the function that makes it) is read only by a call that joins a flight already in
   * the air: the caller that starts one awaits its own work, which its call's deadline
   * and the transport bound, so the usual lone Start makes no AbortSignal at all.
   */
  join(key: string, fn: () => Promise<T>, signal?: AbortSignal | (() => AbortSignal)): Promise<T> {
    const flight = this.#flights.get(key);
    if (flight === undefined) {
      const started = fn().finally(() => {
        if (this.#flights.get(key) === started) this.#flights.delete(key);
      });
      this.#flights.set(key, started);
      return started;
    }
    if (signal === undefined) return flight;
    return untilAborted(flight, typeof signal === "function" ? signal() : signal);
  }
}

/** The promise, or the abort of `signal` (its ConnectError, else CANCELED), whichever is first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  const reason = () =>
    signal.reason instanceof ConnectError
      ? signal.reason
      : new ConnectError("the call was canceled", Code.Canceled);
  if (signal.aborted) return Promise.reject(reason());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(reason());
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}
