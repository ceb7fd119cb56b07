import { Code, ConnectError } from "@connectrpc/connect";

/** A stream id as Redis writes it: `<ms>-<seq>`, each an unsigned 64-bit integer. */
const STREAM_ID = /^(\d{1,20})-(\d{1,20})$/;
const U64_MAX = 2n ** 64n - 1n;

/** The largest stream id: nothing can be recorded after it. */
export const LAST_STREAM_ID = `${U64_MAX}-${U64_MAX}`;

/** The two parts of a well-formed stream id, or undefined. */
function parts(id: string): [bigint, bigint] | undefined {
  const match = STREAM_ID.exec(id);
  if (match === null) return undefined;
  const ms = BigInt(match[1] as string);
  const seq = BigInt(match[2] as string);
  return ms <= U64_MAX && seq <= U64_MAX ? [ms, seq] : undefined;
}

/**
 * Checks a ListSettlements cursor: empty (from the start of the log) or a stream id
 * (`<ms>-<seq>`, each at most 2^64-1), which is what the service hands out as cursors.
 * Anything else is INVALID_ARGUMENT before Redis sees it, so no caller's text becomes
 * part of an XRANGE (test/rpc/settlements.test.ts).
 */
export function checkCursor(field: string, value: string): string {
  if (value !== "" && parts(value) === undefined) {
    throw new ConnectError(
      `${field} must be empty or a cursor that ListSettlements answered`,
      Code.InvalidArgument,
    );
  }
  return value;
}

/** Orders two well-formed stream ids as the stream does: negative when `a` is older. */
export function compareStreamIds(a: string, b: string): number {
  const [am, as] = parts(a) ?? [0n, 0n];
  const [bm, bs] = parts(b) ?? [0n, 0n];
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}
