import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  type Pushing,
  type PushSink,
  type PushSource,
  pushSourceOf,
} from "../store/push-source.js";

/** A call whose `before` hooks ran, or still run (`pending`). */
export interface Started<C extends { readonly context: HandlerContext }> {
  readonly call: C;
  readonly pending: Promise<void> | undefined;
}

/**
 * A stream's messages passed through as they come, with the hooks around the whole
 * stream: `before` at the first read, `after` once when it ends (its last message, an
 * error, or the reader stopping early). Read as an iterator, or pushed when the
 * handler's stream can push (store/push-source.ts; `before` then runs at `pushTo`). Not
 * a generator: a generator's `yield*` costs turns per message, and one change of a chat
 * with 1,000 watchers passes through here 1,000 times.
 */
export class HookedStream<C extends { readonly context: HandlerContext }>
  implements AsyncIterableIterator<unknown>, PushSource<unknown>
{
  readonly #start: () => Started<C>;
  readonly #open: () => AsyncIterable<unknown>;
  readonly #finish: (call: C | undefined, began: number, error: unknown) => void;
  #call: C | undefined;
  #source: AsyncIterator<unknown> | undefined;
  /** The handler's stream while a `before` hook waits (a JWT being verified). */
  #opening: Promise<AsyncIterator<unknown>> | undefined;
  #began = 0;
  #ended = false;

  constructor(
    start: () => Started<C>,
    open: () => AsyncIterable<unknown>,
    finish: (call: C | undefined, began: number, error: unknown) => void,
  ) {
    this.#start = start;
    this.#open = open;
    this.#finish = finish;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<unknown>> {
    if (this.#ended) return { done: true, value: undefined };
    try {
      const result = await (this.#source ?? (await (this.#opening ?? this.#opened()))).next();
      if (result.done === true) this.#end(undefined);
      return result;
    } catch (err) {
      // A failed read leaves its source closed (a watch leaves its channel), as a loop would.
      this.#source?.return?.()?.catch(() => {});
      this.#end(err);
      throw err;
    }
  }

  /**
   * The handler's stream pushed to `sink`, its end running `after` before the sink hears
   * it; undefined when that stream cannot push (it is open then: read it). A `before`
   * hook that refuses, or a handler that throws at once, throws here, `after` told.
   */
  pushTo(sink: PushSink<unknown>): Pushing | undefined {
    if (this.#ended || this.#source !== undefined || this.#opening !== undefined) return undefined;
    let source: AsyncIterator<unknown> | Promise<AsyncIterator<unknown>>;
    try {
      source = this.#opened();
    } catch (err) {
      this.#end(err);
      throw err;
    }
    // A hook that waits: the transport reads the stream instead, `next` awaiting it.
    if (source instanceof Promise) return undefined;
    const pushing = pushSourceOf<unknown>(source)?.pushTo({
      push: (message) => sink.push(message),
      end: (error) => {
        try {
          this.#end(error);
        } finally {
          sink.end(error);
        }
      },
    });
    if (pushing === undefined) return undefined;
    return {
      resume: () => pushing.resume(),
      stop: () => {
        pushing.stop();
        this.#end(undefined);
      },
    };
  }

  /**
   * The handler's stream, opened now: `before` runs, and the call's time starts; a
   * promise of it when a hook waits (it rejects when the hook refuses the call).
   */
  #opened(): AsyncIterator<unknown> | Promise<AsyncIterator<unknown>> {
    this.#began = performance.now();
    const { call, pending } = this.#start();
    this.#call = call;
    if (pending === undefined) return this.#openSource();
    const opening = pending.then(() => this.#openSource());
    // Read by `next` (or `#close`); a refusal seen by neither is not an unhandled one.
    opening.catch(() => {});
    this.#opening = opening;
    return opening;
  }

  #openSource(): AsyncIterator<unknown> {
    this.#source = this.#open()[Symbol.asyncIterator]();
    return this.#source;
  }

  /** The reader stops early: the handler's stream is closed, and the call ends OK. */
  async return(): Promise<IteratorResult<unknown>> {
    await this.#close(undefined);
    return { done: true, value: undefined };
  }

  /**
   * The reader failed (connect-node, when a write to the client fails): the handler's
   * stream is closed and the call ends with that error, or CANCELED when the client left.
   */
  async throw(err: unknown): Promise<IteratorResult<unknown>> {
    await this.#close(this.#call?.context.signal.aborted === true ? undefined : err);
    throw err;
  }

  async #close(error: unknown): Promise<void> {
    if (this.#ended) return;
    // A stream closed while a hook waits: closed once it has opened (or was refused).
    if (this.#source === undefined && this.#opening !== undefined) {
      await this.#opening.catch(() => undefined);
      if (this.#ended) return;
      if (this.#source === undefined) return this.#end(error);
    }
    // A stream never read ran nothing: no hooks, as a generator never started.
    if (this.#source === undefined) {
      this.#ended = true;
      return;
    }
    try {
      await this.#source.return?.();
    } finally {
      this.#end(error);
    }
  }

  #end(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    const call = this.#call;
    // A stream the client left ends here too, without an error of its own.
    if (error === undefined && call !== undefined && call.context.signal.aborted) {
      error = new ConnectError("the client left", Code.Canceled);
    }
    this.#finish(call, this.#began, error);
  }
}
