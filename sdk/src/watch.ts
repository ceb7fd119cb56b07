import { type DescMessage, equals, type MessageShape } from "@bufbuild/protobuf";
import { type CallOptions, Code, ConnectError } from "@connectrpc/connect";
import { backoffMs, type Settled, sleep } from "./retry.js";

/**
 * How the SDK's watches (`watchSuggestions`, `watchWorkspaceSuggestions`) behave on their
 * defaults: they ask for heartbeats, hide them, and reconnect after any end that was not the
 * caller's, waiting with exponential backoff and full jitter between tries. Every field is
 * optional; the defaults are `DEFAULT_WATCH_POLICY`.
 */
export interface WatchPolicy {
  /**
   * Asked of the server as `heartbeat_seconds` when the request sets none: while nothing
   * changes, the stream carries a heartbeat at that interval, so that a proxy's idle timeout
   * (60 s at AWS ALB and nginx) never cuts it. 0: none. The server takes 0 or 5 and more.
   */
  readonly heartbeatSeconds?: number | undefined;
  /** The ceiling of the first wait before a reconnect; each further one doubles it. */
  readonly initialBackoffMs?: number | undefined;
  /** The largest ceiling of a wait before a reconnect. */
  readonly maxBackoffMs?: number | undefined;
}

/** The watches' defaults: heartbeats every 15 s, reconnect waits below 250 ms to 10 s. */
export const DEFAULT_WATCH_POLICY: Settled<WatchPolicy> = Object.freeze({
  heartbeatSeconds: 15,
  initialBackoffMs: 250,
  maxBackoffMs: 10_000,
});

/** A connection that lasted this long starts the backoff afresh when it ends. */
const HEALTHY_CONNECTION_MS = 5_000;

/** Why a watch is about to reconnect, as `WatchCallOptions.onReconnecting` hears it. */
export interface WatchReconnect {
  /** How the stream ended: its error, or undefined when the server ended it with OK. */
  readonly reason: ConnectError | undefined;
  /** How long the watch waits before it opens the stream again, in ms. */
  readonly waitMs: number;
  /** How many ends in a row this is, counting afresh after a connection that lasted. */
  readonly attempt: number;
}

/** A watch call's options: connect-es's, `raw`, and hooks that tell a UI how it is connected. */
export interface WatchCallOptions extends CallOptions {
  /**
   * The stream as the server sends it: heartbeats included (none unless the request asks),
   * every message, and its end (OK, UNAVAILABLE, ...) as the end of the loop: no reconnect.
   * Leaving the loop still ends the call at once.
   */
  readonly raw?: boolean | undefined;
  /**
   * Called when the stream ended in a way a reconnect mends, before the wait that precedes
   * the reconnect (a page can say "reconnecting"). Not called with `raw`.
   */
  readonly onReconnecting?: ((event: WatchReconnect) => void) | undefined;
  /**
   * Called when a stream of the watch, the first or a reconnect, delivers its first message
   * (a state or a heartbeat): the watch is live again, even when the state it finds is the
   * one last yielded and so is not yielded again. Not called with `raw`.
   */
  readonly onConnected?: (() => void) | undefined;
}

/** The hooks a reconnecting watch calls. */
type WatchHooks = Pick<WatchCallOptions, "onReconnecting" | "onConnected">;

/**
 * Codes that a reconnect cannot mend: the watch ends with them. Any other end (UNAVAILABLE
 * when an instance drains, a reset connection, a proxy's idle timeout, an unexpected OK)
 * is followed by a reconnect.
 */
const FINAL_CODES: ReadonlySet<Code> = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.AlreadyExists,
  Code.PermissionDenied,
  Code.FailedPrecondition,
  Code.OutOfRange,
  Code.Unimplemented,
  Code.Unauthenticated,
]);

/**
 * Wraps a server stream so that leaving a `for await` over it (`break`, `return`, a throw in
 * the loop) ends the call at once: connect-es's clients (2.1) answer an iterator without
 * `return()`, so such a loop leaves the HTTP/2 stream open, the server streaming into it and
 * Node's process held open by the session, until the server ends it. Here the call runs
 * under a signal of its own, linked to the caller's, that `return()` aborts.
 */
export function endOnLeave<T>(
  start: (signal: AbortSignal) => AsyncIterable<T>,
  callerSignal: AbortSignal | undefined,
): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const controller = new AbortController();
      const follow = () => controller.abort(callerSignal?.reason);
      if (callerSignal?.aborted) follow();
      else callerSignal?.addEventListener("abort", follow, { once: true });
      const release = () => {
        callerSignal?.removeEventListener("abort", follow);
        controller.abort();
      };
      const it = start(controller.signal)[Symbol.asyncIterator]();
      return {
        next: () =>
          it.next().then(
            (result) => {
              if (result.done === true) callerSignal?.removeEventListener("abort", follow);
              return result;
            },
            (err: unknown) => {
              callerSignal?.removeEventListener("abort", follow);
              throw err;
            },
          ),
        return: (value?: unknown) => {
          release();
          return Promise.resolve({ done: true, value: value as T });
        },
      };
    },
  };
}

/** A watch response: a state, or a heartbeat (`heartbeat = true`, nothing else). */
type WatchResponse = { readonly heartbeat: boolean };

/** The request fields the SDK reads and sets. */
type WatchRequest = { readonly heartbeatSeconds?: number | undefined };

/**
 * One of the SDK client's watch methods over `open`, the connect-es client's method:
 * - on `policy` (the default): asks for heartbeats (`heartbeatSeconds`, unless the request
 *   sets some), hides them, yields a state only when it differs from the last one yielded
 *   (a reconnect that finds nothing new yields nothing), and after any end that was not the
 *   caller's reconnects with backoff; it ends only when the caller aborts (rejecting with
 *   Canceled, as every connect-es call does), when the call's own `timeoutMs` runs out
 *   (DeadlineExceeded), or on a code a reconnect cannot mend (PERMISSION_DENIED,
 *   UNAUTHENTICATED, INVALID_ARGUMENT, NOT_FOUND, ...);
 * - with `policy` `false` or the call's `raw`: the server's stream as it is.
 * Either way, leaving the loop ends the call at once (`endOnLeave`).
 */
export function survivingWatch<Req extends WatchRequest, Desc extends DescMessage>(
  open: (request: Req, options: CallOptions) => AsyncIterable<MessageShape<Desc>>,
  schema: Desc,
  policy: WatchPolicy | false | undefined,
): (request: Req, options?: WatchCallOptions) => AsyncIterable<MessageShape<Desc>> {
  return (request, options = {}) => {
    const { raw, onReconnecting, onConnected, ...callOptions } = options;
    if (raw === true || policy === false) {
      return endOnLeave((signal) => open(request, { ...callOptions, signal }), options.signal);
    }
    const settings: Settled<WatchPolicy> = {
      heartbeatSeconds: policy?.heartbeatSeconds ?? DEFAULT_WATCH_POLICY.heartbeatSeconds,
      initialBackoffMs: policy?.initialBackoffMs ?? DEFAULT_WATCH_POLICY.initialBackoffMs,
      maxBackoffMs: policy?.maxBackoffMs ?? DEFAULT_WATCH_POLICY.maxBackoffMs,
    };
    const asked: Req =
      (request.heartbeatSeconds ?? 0) > 0 || settings.heartbeatSeconds <= 0
        ? request
        : { ...request, heartbeatSeconds: settings.heartbeatSeconds };
    const deadline =
      callOptions.timeoutMs !== undefined && callOptions.timeoutMs > 0
        ? Date.now() + callOptions.timeoutMs
        : undefined;
    return endOnLeave(
      (signal) =>
        reconnecting(
          (left) =>
            open(asked, {
              ...callOptions,
              signal,
              ...(left === undefined ? {} : { timeoutMs: left }),
            }),
          schema,
          settings,
          signal,
          deadline,
          { onReconnecting, onConnected },
        ),
      options.signal,
    );
  };
}

async function* reconnecting<Desc extends DescMessage>(
  connect: (timeoutMs: number | undefined) => AsyncIterable<MessageShape<Desc>>,
  schema: Desc,
  settings: Settled<WatchPolicy>,
  signal: AbortSignal,
  deadline: number | undefined,
  hooks: WatchHooks,
): AsyncGenerator<MessageShape<Desc>> {
  const backoff = { ...settings, maxAttempts: Number.POSITIVE_INFINITY, multiplier: 2 };
  let last: MessageShape<Desc> | undefined;
  let failures = 0;
  for (;;) {
    const opened = Date.now();
    let reason: ConnectError | undefined;
    try {
      const left = deadline === undefined ? undefined : Math.max(1, deadline - opened);
      let connected = false;
      for await (const message of connect(left)) {
        if (!connected) {
          connected = true;
          hooks.onConnected?.();
        }
        if ((message as unknown as WatchResponse).heartbeat) continue;
        if (last !== undefined && equals(schema, last, message)) continue;
        last = message;
        yield message;
      }
    } catch (err) {
      const error = ConnectError.from(err);
      if (signal.aborted || FINAL_CODES.has(error.code)) throw err;
      if (deadline !== undefined && Date.now() >= deadline) throw err;
      reason = error;
    }
    failures = Date.now() - opened >= HEALTHY_CONNECTION_MS ? 1 : failures + 1;
    const wait = backoffMs(backoff, failures);
    if (deadline !== undefined && Date.now() + wait >= deadline) {
      throw new ConnectError("the operation timed out", Code.DeadlineExceeded);
    }
    hooks.onReconnecting?.({ reason, waitMs: wait, attempt: failures });
    try {
      await sleep(wait, signal);
    } catch {
      throw new ConnectError("the operation was aborted", Code.Canceled);
    }
  }
}
