import { Code, ConnectError } from "@connectrpc/connect";
import { dependencyError } from "./errors.js";

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * What a Watch handler answers: a response made by `respond` for each value the hub's
 * watch gives, ending as every Watch call ends: OK when the client leaves or the server
 * shuts down (the watch is done), DEADLINE_EXCEEDED when the caller's deadline ended it
 * (`signal`'s reason), UNAVAILABLE when Redis failed under it (`dependencyError`). An
 * iterator, not a generator: a generator costs turns per message, and one change of a
 * chat with 1,000 watchers passes through here 1,000 times.
 */
export function watchedStream<T, R>(
  watch: AsyncIterator<T>,
  respond: (value: T) => R,
  signal: AbortSignal,
): AsyncIterableIterator<R> {
  const failed = (err: unknown): never => {
    throw dependencyError(err, "the suggestion store");
  };
  const answer = (result: IteratorResult<T>): IteratorResult<R> => {
    if (result.done !== true) {
      try {
        return { done: false, value: respond(result.value) };
      } catch (err) {
        // The call ends here: the watch ends too, and leaves its channel.
        watch.return?.()?.catch(() => {});
        return failed(err);
      }
    }
    const reason: unknown = signal.aborted ? signal.reason : undefined;
    if (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) throw reason;
    return DONE;
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => watch.next().then(answer, failed),
    return: async () => {
      await watch.return?.();
      return DONE;
    },
  };
}
