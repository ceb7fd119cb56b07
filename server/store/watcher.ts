import type { Beating, HeartbeatClock } from "./heartbeat-clock.js";
import type { Pushing, PushSink, PushSource } from "./push-source.js";

/**
 * What a watch that asked for heartbeats gives when nothing has been sent to it for its
 * period: no lists, only a sign of life for proxies that close idle streams. The Watch
 * handlers answer it with a `heartbeat = true` message (rpc/watched-stream.ts).
 */
export const HEARTBEAT: unique symbol = Symbol("heartbeat");
export type Heartbeat = typeof HEARTBEAT;

/** What a topic's read gives: equal versions, equal values (not sent twice). */
export interface Snapshot<T = unknown> {
  readonly version: string;
  readonly value: T;
}

/** A read of the iterator that waits for the next lists. */
interface WaitingRead<T> {
  resolve(result: IteratorResult<T | Heartbeat>): void;
  reject(error: unknown): void;
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * One watcher's mailbox (store/watch-hub.ts), read as an iterator or pushed to a sink
 * (store/push-source.ts). It keeps only the newest lists its reader has not taken yet,
 * so a slow client skips lists that are already stale instead of queueing them without
 * bound. A reader that waits is handed the lists as they are offered, and a sink is
 * handed them within the hub's loop over the chat's watchers: no generator stands
 * between the hub and the handler, which one change of a chat with 1,000 watchers would
 * pass through 1,000 times.
 */
export class Watcher<T = unknown>
  implements AsyncIterableIterator<T | Heartbeat>, PushSource<T | Heartbeat>
{
  #pending: Snapshot<T> | undefined;
  #version: string | undefined;
  #failed = false;
  #error: unknown;
  #ended = false;
  #waiting: WaitingRead<T> | undefined;
  /** The sink the lists are pushed to, once `pushTo` was called; dropped when told the end. */
  #sink: PushSink<T | Heartbeat> | undefined;
  /** The sink answered false: the newest lists wait in `#pending` until it resumes. */
  #paused = false;
  /** Leaves the channel; run once, when the watch ends however it ends. */
  #leave: (() => void) | undefined;
  /** The clock of its heartbeats and its entry there, when it asked for them. */
  #clock: HeartbeatClock | undefined;
  #beating: Beating | undefined;

  /** @param leave run once when the watch ends (the reader stops, or it is ended). */
  constructor(leave?: () => void) {
    this.#leave = leave;
  }

  /**
   * From now on, a HEARTBEAT is given every `periodMs` while no lists are offered, on
   * `clock`'s one timer. A reader that has not taken what it was given gets none: a
   * stream with something to write is not idle.
   */
  beatEvery(clock: HeartbeatClock, periodMs: number): void {
    if (this.#ended || this.#beating !== undefined) return;
    this.#clock = clock;
    this.#beating = clock.add(this, periodMs);
  }

  /** The clock's call: a HEARTBEAT to a reader that waits, or to a sink that takes it. */
  beat(): void {
    if (this.#ended) return;
    const sink = this.#sink;
    if (sink !== undefined) {
      if (this.#paused || this.#pending !== undefined) return;
      this.#paused = true;
      try {
        if (sink.push(HEARTBEAT)) this.#paused = false;
      } catch (err) {
        this.fail(err);
      }
      return;
    }
    const waiting = this.#waiting;
    if (waiting === undefined) return;
    this.#waiting = undefined;
    waiting.resolve({ done: false, value: HEARTBEAT });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Offers lists; the same version as the last one offered is not sent twice. */
  offer(snapshot: Snapshot<T>): void {
    if (this.#ended || snapshot.version === this.#version) return;
    this.#version = snapshot.version;
    if (this.#beating !== undefined) this.#clock?.touch(this.#beating);
    if (this.#sink !== undefined) {
      this.#pending = snapshot;
      this.#deliver();
      return;
    }
    const waiting = this.#waiting;
    if (waiting === undefined) {
      this.#pending = snapshot;
      return;
    }
    this.#waiting = undefined;
    waiting.resolve({ done: false, value: snapshot.value });
  }

  /** Ends the watch with an error (Redis failed under it), told to its reader once. */
  fail(error: unknown): void {
    if (this.#ended) return;
    const { waiting, sink } = this.#finish();
    if (sink !== undefined) {
      tellEnd(sink, error);
    } else if (waiting !== undefined) {
      waiting.reject(error);
    } else {
      this.#error = error;
      this.#failed = true;
    }
  }

  /** Ends the watch cleanly (the client left, or the server shuts down). */
  end(): void {
    if (this.#ended) return;
    const { waiting, sink } = this.#finish();
    waiting?.resolve(DONE);
    if (sink !== undefined) tellEnd(sink, undefined);
  }

  /** The next lists to send; done once ended. One read at a time, as `for await` reads. */
  next(): Promise<IteratorResult<T | Heartbeat>> {
    if (this.#failed) {
      this.#failed = false;
      return Promise.reject(this.#error);
    }
    if (this.#ended) return Promise.resolve(DONE);
    const pending = this.#pending;
    if (pending !== undefined) {
      this.#pending = undefined;
      return Promise.resolve({ done: false, value: pending.value });
    }
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  /** The reader stops early (it left its loop): the watch ends. */
  return(): Promise<IteratorResult<T | Heartbeat>> {
    this.end();
    return Promise.resolve(DONE);
  }

  /**
   * From now on the lists are pushed to `sink` as they are offered (lists already
   * waiting come at once), and its end is told to it; a watch that has already failed
   * or ended tells it at once.
   */
  pushTo(sink: PushSink<T | Heartbeat>): Pushing {
    if (this.#failed) {
      this.#failed = false;
      tellEnd(sink, this.#error);
    } else if (this.#ended) {
      tellEnd(sink, undefined);
    } else {
      this.#sink = sink;
      this.#deliver();
    }
    return {
      resume: () => {
        this.#paused = false;
        this.#deliver();
      },
      stop: () => {
        this.#sink = undefined;
        this.end();
      },
    };
  }

  /**
   * The waiting lists to the sink, unless it is paused. It is paused from the push on,
   * until the push answers true or the sink resumes (within the push, too). A sink that
   * throws fails its own watch only: this runs within the hub's loop over the chat's
   * watchers.
   */
  #deliver(): void {
    const sink = this.#sink;
    const pending = this.#pending;
    if (sink === undefined || pending === undefined || this.#paused) return;
    this.#pending = undefined;
    this.#paused = true;
    try {
      if (sink.push(pending.value)) this.#paused = false;
    } catch (err) {
      this.fail(err);
    }
  }

  /** Ends the watch and leaves the channel; answers its reader, to be told how it ended. */
  #finish(): {
    waiting: WaitingRead<T> | undefined;
    sink: PushSink<T | Heartbeat> | undefined;
  } {
    this.#ended = true;
    if (this.#beating !== undefined) this.#clock?.remove(this.#beating);
    this.#beating = undefined;
    this.#pending = undefined;
    const reader = { waiting: this.#waiting, sink: this.#sink };
    this.#waiting = undefined;
    this.#sink = undefined;
    const leave = this.#leave;
    this.#leave = undefined;
    leave?.();
    return reader;
  }
}

/**
 * Tells a sink its watch's end. The end runs within abort listeners (the client left, the
 * deadline, shutdown) and the hub's loops, where a throw would crash the process or end
 * the chat's other watches: a sink that throws here has already lost its own watch, and
 * that is all it loses.
 */
function tellEnd<T>(sink: PushSink<T>, error: unknown): void {
  try {
    sink.end(error);
  } catch {
    // Its watch is over either way.
  }
}
