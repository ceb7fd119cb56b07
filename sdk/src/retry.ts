import {
  Code,
  ConnectError,
  type ContextValues,
  createContextKey,
  type Interceptor,
} from "@connectrpc/connect";
import { isRetrySafe } from "./retry-safety.js";

/**
 * How the SDK retries a retry-safe unary call (`isRetrySafe`) that failed in a way a restart,
 * a drain or a proxy causes (`isRetryableFailure`). Every field is optional; the defaults
 * are `DEFAULT_RETRY_POLICY`.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included (1: no retry). */
  readonly maxAttempts?: number | undefined;
  /** The ceiling of the first wait; each further wait's ceiling is `multiplier` times more. */
  readonly initialBackoffMs?: number | undefined;
  /** The largest ceiling a wait may have. */
  readonly maxBackoffMs?: number | undefined;
  /** How much each wait's ceiling grows. */
  readonly multiplier?: number | undefined;
}

/** A policy with every field given. */
export type Settled<T> = { readonly [K in keyof T]-?: Exclude<T[K], undefined> };

/**
 * The SDK's retry policy unless a client says otherwise: 5 attempts, waits drawn at random
 * ("full jitter") below 200 ms, 400 ms, 800 ms and 1.6 s: at most 3 s of waiting, enough for
 * a proxy to route around an instance that restarts, and never past the call's deadline.
 */
export const DEFAULT_RETRY_POLICY: Settled<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  initialBackoffMs: 200,
  maxBackoffMs: 5_000,
  multiplier: 2,
});

/**
 * The instant (ms since the epoch) a call must be over by, as the SDK's clients put it in a
 * call's context values; `undefined`: no deadline. An interceptor of a transport of its own
 * reads the deadline from the request's timeout header instead.
 */
export const callDeadline = createContextKey<number | undefined>(undefined, {
  description: "the call's deadline, ms since the epoch",
});

/** Node.js and undici error codes of a connection or stream that broke under a call. */
const TRANSPORT_CODES: ReadonlySet<string> = new Set([
  "ERR_HTTP2_STREAM_ERROR",
  "ERR_HTTP2_SESSION_ERROR",
  "ERR_HTTP2_GOAWAY_SESSION",
  "ERR_HTTP2_STREAM_CANCEL",
  "ERR_HTTP2_INVALID_SESSION",
  "ERR_HTTP2_PING_CANCEL",
  "ERR_HTTP2_ERROR",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_STREAM_DESTROYED",
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

/**
 * True when a call failed in a way a restart, a drain or a proxy produces, rather than by an
 * answer of the service's handler:
 * - UNAVAILABLE (a drain, a lost Redis, a refused connection, a proxy's 502, 503 or 504);
 * - INTERNAL, UNKNOWN, CANCELED or ABORTED raised by the client's own transport for a stream
 *   or connection that broke: connect-node reports a stream refused by a GOAWAY or by
 *   RST_STREAM(REFUSED_STREAM) as INTERNAL `Stream closed with error code
 *   NGHTTP2_REFUSED_STREAM`, a proxy's RST_STREAM(INTERNAL_ERROR) as INTERNAL, a connection
 *   closed under the call as CANCELED `http/2 stream closed with error code CANCEL (0x8)`,
 *   and a stream cut after its headers as INTERNAL `protocol error: missing status`
 *   (test/sdk/sdk-retry.test.ts provokes each).
 *
 * A status the server sent (an INTERNAL from a handler included) carries no such cause and
 * is not retryable.
 */
export function isRetryableFailure(err: unknown): boolean {
  const error = ConnectError.from(err);
  switch (error.code) {
    case Code.Unavailable:
      return true;
    case Code.Internal:
    case Code.Unknown:
    case Code.Canceled:
    case Code.Aborted:
      return brokeInTransport(error);
    default:
      return false;
  }
}

function brokeInTransport(error: ConnectError): boolean {
  if (error.rawMessage.startsWith("http/2 stream closed with error code ")) return true;
  if (error.rawMessage === "protocol error: missing status") return true;
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 8 && cause instanceof Error; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && TRANSPORT_CODES.has(code)) return true;
    // A fetch that never got an answer (browsers: "Failed to fetch"; Node: "fetch failed").
    if (cause instanceof TypeError && /fetch/i.test(cause.message)) return true;
    cause = cause.cause;
  }
  return false;
}

/** The wait before attempt `attempt + 1` (attempt ≥ 1): full jitter below the ceiling. */
export function backoffMs(policy: Settled<RetryPolicy>, attempt: number): number {
  const ceiling = Math.min(
    policy.maxBackoffMs,
    policy.initialBackoffMs * policy.multiplier ** (attempt - 1),
  );
  return Math.random() * ceiling;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The deadline of a call: the SDK's context value, else the protocol's timeout header. */
function deadlineOf(contextValues: ContextValues, header: Headers, start: number) {
  const known = contextValues.get(callDeadline);
  if (known !== undefined) return known;
  const grpc = header.get("grpc-timeout");
  if (grpc !== null) {
    const match = /^(\d+)([HMSmun])$/.exec(grpc);
    if (match !== null) {
      const unit = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 }[
        match[2] as "H" | "M" | "S" | "m" | "u" | "n"
      ];
      return start + Number(match[1]) * unit;
    }
  }
  const connect = header.get("connect-timeout-ms");
  return connect === null ? undefined : start + Number(connect);
}

/** Restates the timeout header of a retry: the time left, not the first attempt's. */
function restateTimeout(header: Headers, leftMs: number): void {
  const ms = Math.max(1, Math.floor(leftMs));
  if (header.has("grpc-timeout")) header.set("grpc-timeout", `${ms}m`);
  if (header.has("connect-timeout-ms")) header.set("connect-timeout-ms", String(ms));
}

/**
 * An interceptor that retries unary calls under `policy` (`false`: none): only calls that are
 * retry-safe (`isRetrySafe`, judged on the request itself, so a `SuggestTask` without a
 * `tool_call_id` is sent once whatever fails), only after a failure `isRetryableFailure`
 * accepts, with exponential backoff and full jitter, never after the caller aborted, and
 * never past the call's deadline: a wait that would end at or after it is not begun, and the
 * last failure is thrown instead. Server streams pass through untouched (the SDK's watches
 * reconnect on their own, watch.ts).
 *
 * The SDK's clients install it (option `retry`); it also works among a connect-es
 * transport's own `interceptors`, where it reads the deadline from the timeout header.
 */
export function retryInterceptor(policy: RetryPolicy | false = {}): Interceptor {
  if (policy === false) return (next) => next;
  const settings: Settled<RetryPolicy> = {
    maxAttempts: policy.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts,
    initialBackoffMs: policy.initialBackoffMs ?? DEFAULT_RETRY_POLICY.initialBackoffMs,
    maxBackoffMs: policy.maxBackoffMs ?? DEFAULT_RETRY_POLICY.maxBackoffMs,
    multiplier: policy.multiplier ?? DEFAULT_RETRY_POLICY.multiplier,
  };
  if (settings.maxAttempts <= 1) return (next) => next;
  return (next) => async (req) => {
    if (req.stream || !isRetrySafe(req.method, req.message)) return next(req);
    const start = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (err) {
        if (attempt >= settings.maxAttempts || req.signal.aborted || !isRetryableFailure(err)) {
          throw err;
        }
        const wait = backoffMs(settings, attempt);
        const deadline = deadlineOf(req.contextValues, req.header, start);
        if (deadline !== undefined && Date.now() + wait >= deadline) throw err;
        try {
          await sleep(wait, req.signal);
        } catch {
          throw err;
        }
        if (deadline !== undefined) restateTimeout(req.header, deadline - Date.now());
      }
    }
  };
}
