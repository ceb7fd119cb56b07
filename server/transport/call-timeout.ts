import type { IncomingHttpHeaders } from "node:http";
import type { ConnectError } from "@connectrpc/connect";
import { parseTimeout } from "@connectrpc/connect/protocol-grpc";

/**
 * The longest timer Node keeps (2^31 - 1 ms, about 24.8 days): a longer `setTimeout`
 * fires at once, which would end a call with a long deadline immediately.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The caller's deadline of a gRPC call from its `grpc-timeout` header, accepted however
 * long it is (a deadline is the caller's budget, never a reason to refuse the call) and
 * held at `MAX_TIMER_MS`. Only a malformed value is an error (INVALID_ARGUMENT).
 */
export function callerTimeout(value: string | null): {
  timeoutMs?: number | undefined;
  error?: ConnectError | undefined;
} {
  const parsed = parseTimeout(value, Number.POSITIVE_INFINITY);
  if (parsed.timeoutMs === undefined || parsed.timeoutMs <= MAX_TIMER_MS) return parsed;
  return { timeoutMs: MAX_TIMER_MS };
}

/** The `grpc-timeout` value for `MAX_TIMER_MS`, rounded down to whole seconds. */
const MAX_GRPC_TIMEOUT = `${Math.floor(MAX_TIMER_MS / 1000)}S`;

/**
 * Holds the deadline headers that connect-node reads (`grpc-timeout` for gRPC and
 * gRPC-Web, `connect-timeout-ms` for Connect) at `MAX_TIMER_MS`, so that a caller's
 * deadline of a month is served as about 24 days rather than failing at once. Shorter
 * and malformed values pass untouched. connect-node is given no `maxTimeoutMs`, which
 * would refuse deadlines above it; the service's own work is bounded by the call
 * pipeline instead (server/pipeline/deadlines.ts).
 */
export function holdDeadlineHeaders(headers: IncomingHttpHeaders): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string" && (callerTimeout(grpc).timeoutMs ?? 0) >= MAX_TIMER_MS) {
    headers["grpc-timeout"] = MAX_GRPC_TIMEOUT;
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_TIMER_MS) {
    headers["connect-timeout-ms"] = String(MAX_TIMER_MS);
  }
}
