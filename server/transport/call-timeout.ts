import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The longest timer Node keeps (2^31 - 1 ms, about 24.8 days): a longer `setTimeout`
 * fires at once, which would end a call with a long deadline immediately.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A caller's deadline as read from its header: none, a time left, or the call's error. */
export interface CallerTimeout {
  readonly timeoutMs?: number | undefined;
  readonly error?: ConnectError | undefined;
}

/** The `grpc-timeout` value for `MAX_TIMER_MS`, rounded down to whole seconds. */
export const MAX_GRPC_TIMEOUT = `${Math.floor(MAX_TIMER_MS / 1000)}S`;

const GRPC_UNITS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/** The error of a call whose deadline had passed when it arrived (as connect's own contexts). */
function alreadyPast(): ConnectError {
  return new ConnectError("the operation timed out", Code.DeadlineExceeded);
}

/**
 * The caller's deadline of a gRPC or gRPC-Web call from its `grpc-timeout` header (null:
 * none). Accepted however long it is (a deadline is the caller's budget, never a reason
 * to refuse the call) and held at `MAX_TIMER_MS`. A deadline under one millisecond
 * (`0n`, `0m`, `0S`, `999u`) has passed by the time the call is read: DEADLINE_EXCEEDED,
 * before any work. An empty or malformed value is the caller's error: INVALID_ARGUMENT
 * `invalid grpc-timeout header "<value>"`. Both transports read it here (the fast path,
 * and connect-node through connect-adapter.ts). Pinned by test/e2e/deadlines.test.ts.
 */
export function grpcTimeout(value: string | null): CallerTimeout {
  if (value === null) return {};
  const parsed = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (parsed === null) {
    return {
      error: new ConnectError(`invalid grpc-timeout header "${value}"`, Code.InvalidArgument),
    };
  }
  const ms = Number(parsed[1]) * (GRPC_UNITS[parsed[2] as string] as number);
  if (ms < 1) return { error: alreadyPast() };
  return { timeoutMs: Math.min(ms, MAX_TIMER_MS) };
}

/**
 * The caller's deadline of a Connect call from its `connect-timeout-ms` header, read as
 * `grpcTimeout` reads gRPC's: 0 is DEADLINE_EXCEEDED before any work, a value that is
 * not 1 to 10 digits INVALID_ARGUMENT with connect's own text, a long one held at
 * `MAX_TIMER_MS`.
 */
export function connectTimeout(value: string | null): CallerTimeout {
  if (value === null) return {};
  if (!/^\d{1,10}$/.test(value)) {
    return {
      error: new ConnectError(
        `protocol error: invalid connect timeout value: ${value}`,
        Code.InvalidArgument,
      ),
    };
  }
  const ms = Number(value);
  if (ms < 1) return { error: alreadyPast() };
  return { timeoutMs: Math.min(ms, MAX_TIMER_MS) };
}
