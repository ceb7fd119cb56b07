import { Code, ConnectError } from "@connectrpc/connect";
import { type Pushing, type PushSource, pushSourceOf } from "../store/push-source.js";
import { dependencyError } from "./errors.js";

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * What a Watch handler answers: a response made by `respond` for each value the hub's
 * watch gives, ending as every Watch call ends: OK when the client leaves or the server
 * shuts down (the watch is done), DEADLINE_EXCEEDED when the caller's deadline ended it
 * (`signal`'s reason), UNAVAILABLE when Redis failed under it (`dependencyError`). Read
 * as an iterator (connect-node) or pushed (the gRPC fast path, store/push-source.ts),
 * when the watch can push: neither is a generator, which costs turns per message, and
 * one change of a chat with 1,000 watchers passes through here 1,000 times.
 */
export function watchedStream<T, R>(
  watch: AsyncIterator<T>,
  respond: (value: T) => R,
  signal: AbortSignal,
): AsyncIterableIterator<R> & PushSource<R> {
  const storeFailure = (err: unknown) => dependencyError(err, "the suggestion store");
  const failed = (err: unknown): never => {
    throw storeFailure(err);
  };
  /** How a watch that is done ends the call: the deadline's error, or OK. */
  const doneReason = (): ConnectError | undefined => {
    const reason: unknown = signal.aborted ? signal.reason : undefined;
    return reason instanceof ConnectError && reason.code === Code.DeadlineExceeded
      ? reason
      : undefined;
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
    const reason = doneReason();
    if (reason !== undefined) throw reason;
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
    pushTo(sink): Pushing | undefined {
      const source = pushSourceOf<T>(watch);
      if (source === undefined) return undefined;
      let told = false;
      const end = (error?: unknown) => {
        if (told) return;
        told = true;
        sink.end(error);
      };
      return source.pushTo({
        push: (value) => {
          if (told) return false;
          let response: R;
          try {
            response = respond(value);
          } catch (err) {
            // As the iterator's answer: the call fails, and the watch leaves its channel.
            end(storeFailure(err));
            watch.return?.()?.catch(() => {});
            return false;
          }
          return sink.push(response);
        },
        end: (error) => end(error === undefined ? doneReason() : storeFailure(error)),
      });
    },
  };
}
