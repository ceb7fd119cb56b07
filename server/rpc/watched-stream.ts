import { Code, ConnectError } from "@connectrpc/connect";
import { type Pushing, type PushSource, pushSourceOf } from "../store/push-source.js";
import { HEARTBEAT, type Heartbeat } from "../store/watcher.js";
import { dependencyError } from "./errors.js";

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/** The codes of a watch the server ends: the caller's deadline, the server's shutdown. */
const SERVER_ENDS: ReadonlySet<Code> = new Set([Code.DeadlineExceeded, Code.Unavailable]);

/** The fewest seconds between heartbeats a watch may ask for (docs/operating.md, "Idle timeouts and heartbeats"). */
export const MIN_HEARTBEAT_SECONDS = 5;

/**
 * A Watch request's `heartbeat_seconds` as ms: 0 for none, at least
 * MIN_HEARTBEAT_SECONDS, else INVALID_ARGUMENT saying so (test/rpc/watch-heartbeat.test.ts).
 */
export function heartbeatMsOf(seconds: number): number {
  if (seconds !== 0 && seconds < MIN_HEARTBEAT_SECONDS) {
    throw new ConnectError(
      `heartbeat_seconds must be 0 (no heartbeats) or at least ${MIN_HEARTBEAT_SECONDS} (got ${seconds})`,
      Code.InvalidArgument,
    );
  }
  return seconds * 1000;
}

/**
 * What a Watch handler answers: a response made by `respond` for each value the hub's
 * watch gives (`heartbeat`, the one shared message, for each HEARTBEAT), ending as every
 * Watch call ends: OK only when the client left (it hears nothing more either way);
 * the reason the signal aborted with otherwise: DEADLINE_EXCEEDED at the caller's
 * deadline, UNAVAILABLE when the server shuts down (`shutdownSignal`'s reason, never
 * OK: OK would tell the client that nothing more will ever come); UNAVAILABLE when Redis
 * failed under it (`dependencyError`). Read
 * as an iterator (connect-node) or pushed (the gRPC fast path, store/push-source.ts),
 * when the watch can push: neither is a generator, which costs turns per message, and
 * one change of a chat with 1,000 watchers passes through here 1,000 times.
 */
export function watchedStream<T, R>(
  watch: AsyncIterator<T | Heartbeat>,
  respond: (value: T) => R,
  signal: AbortSignal,
  heartbeat?: R,
): AsyncIterableIterator<R> & PushSource<R> {
  const storeFailure = (err: unknown) => dependencyError(err, "the suggestion store");
  const failed = (err: unknown): never => {
    throw storeFailure(err);
  };
  /**
   * How a watch that is done ends the call: the deadline's or the shutdown's error, or
   * OK when the client left (it hears nothing either way).
   */
  const doneReason = (): ConnectError | undefined => {
    const reason: unknown = signal.aborted ? signal.reason : undefined;
    return reason instanceof ConnectError && SERVER_ENDS.has(reason.code) ? reason : undefined;
  };
  const responseOf = (value: T | Heartbeat): R =>
    value === HEARTBEAT && heartbeat !== undefined ? heartbeat : respond(value as T);
  const answer = (result: IteratorResult<T | Heartbeat>): IteratorResult<R> => {
    if (result.done !== true) {
      try {
        return { done: false, value: responseOf(result.value) };
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
      const source = pushSourceOf<T | Heartbeat>(watch);
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
            response = responseOf(value);
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
