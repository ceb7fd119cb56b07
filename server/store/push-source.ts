/**
 * A stream's values handed to a reader as they come, instead of read one `next()` at a
 * time. One change of a chat with 1,000 watchers reaches 1,000 streams: read as async
 * iterators, each message passed four promises (the hub's watcher, the Watch handler, the
 * call pipeline, the transport's loop) before its write, about 3 µs a message beside
 * node:http2's own write (docs/performance.md, "WatchSuggestions"). Pushed, the hub's loop
 * over a chat's watchers writes to every stream in one turn, as the bare node:http2 floor
 * does (bench/fanout-floor.ts).
 *
 * The hub's watcher (store/watcher.ts), the Watch handlers (rpc/watched-stream.ts) and
 * the call pipeline (pipeline/call-pipeline.ts) implement it; the gRPC fast path, which
 * imports nothing of the service, reads it by its shape (transport/handler-types.ts
 * `Pushable`), as it reads `onEnd` (rpc/call-end.ts). connect-node reads the same streams
 * as iterators. Pinned by test/rpc/watch-push.test.ts and
 * test/transport/grpc-server-stream.test.ts.
 */

/** What a pushed stream is handed to. */
export interface PushSink<T> {
  /**
   * The next value. Answers false to pause the stream: nothing more comes until
   * `resume` (a watch keeps only the newest value meanwhile).
   */
  push(value: T): boolean;
  /** The end, told once: undefined when the stream is done, else why it failed. */
  end(error?: unknown): void;
}

/** A stream being pushed, as its reader steers it. */
export interface Pushing {
  /** A sink that answered false takes values again (a waiting one comes at once). */
  resume(): void;
  /** The reader leaves: the stream ends (a watch leaves its channel); its sink is not told. */
  stop(): void;
}

/** A stream that can push. */
export interface PushSource<T> {
  /**
   * Hands the values to `sink` from now on, in place of `next()`: a stream is read or
   * pushed, never both. The stream may push, or end, within this call. Answers undefined
   * when this stream cannot push (a wrapper around one that cannot): read it then.
   */
  pushTo(sink: PushSink<T>): Pushing | undefined;
}

/** `source` as a PushSource, when it is one. */
export function pushSourceOf<T>(source: object): PushSource<T> | undefined {
  return typeof (source as Partial<PushSource<T>>).pushTo === "function"
    ? (source as PushSource<T>)
    : undefined;
}
