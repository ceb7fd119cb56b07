/** Small statistics of the bench's figures. Pure; test/bench/parsers.test.ts covers them. */

/** The value at percentile `p` (0 to 100) of ascending `sorted`; 0 for no values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** The median of `values` (any order); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/** Latency figures of a window, in milliseconds. */
export interface Latency {
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
}

/** p50, p90 and p99 of latencies in milliseconds (any order; the array is sorted in place). */
export function latencyOf(ms: number[]): Latency {
  ms.sort((a, b) => a - b);
  return { p50Ms: percentile(ms, 50), p90Ms: percentile(ms, 90), p99Ms: percentile(ms, 99) };
}
