import { describe, expect, it } from "vitest";
import {
  H2LOAD_MARKS,
  h2loadArgs,
  latencyFromLog,
  parseH2loadSummary,
} from "../../bench/h2load.js";
import { parseRedisBenchmarkCsv } from "../../bench/redis-floor.js";
import { latencyOf, median, percentile } from "../../bench/stats.js";

/** h2load 1.52's output of a timing-based run, as it prints it. */
const H2LOAD_OUTPUT = `starting benchmark...
spawning thread #0: 4 total client(s). Timing-based test with 1s of warm-up time and 3s of main duration for measurements.
Warm-up started for thread #0.
progress: 25% of clients started
progress: 100% of clients started
Application protocol: h2c
Warm-up phase is over for thread #0.
Main benchmark duration is started for thread #0.
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 4.00s, 36314.67 req/s, 1.42MB/s
requests: 108944 total, 108944 started, 108944 done, 108900 succeeded, 40 failed, 3 errored, 1 timeout
status codes: 108900 2xx, 1 3xx, 2 4xx, 3 5xx
traffic: 4.26MB (4467201) total, 639.23KB (654568) headers (space savings 96.40%), 893.92KB (915376) data
                     min         max         mean         sd        +/- sd
time for request:      413us     66.18ms      1.73ms      2.07ms    93.40%
time for connect:        0us         0us         0us         0us     0.00%
time to 1st byte:        0us         0us         0us         0us     0.00%
req/s           :    9044.27     9113.63     9077.62       33.25    50.00%
`;

describe("h2load", () => {
  it("reads the counts of its summary", () => {
    expect(parseH2loadSummary(H2LOAD_OUTPUT)).toEqual({
      requestsPerSecond: 36314.67,
      total: 108944,
      succeeded: 108900,
      failed: 40,
      errored: 3,
      timeout: 1,
      non2xx: 6,
    });
  });

  it("reads a run that finished in milliseconds", () => {
    const out = H2LOAD_OUTPUT.replace("finished in 4.00s", "finished in 729.58ms");
    expect(parseH2loadSummary(out).requestsPerSecond).toBe(36314.67);
  });

  it("refuses output without a summary", () => {
    expect(() => parseH2loadSummary("connect: Connection refused\n")).toThrow(/no summary/);
  });

  it("marks the lines that open and close the measured window", () => {
    const lines = H2LOAD_OUTPUT.split("\n");
    const marked = (re: RegExp) => lines.filter((l) => re.test(l));
    expect(marked(H2LOAD_MARKS["window-start"] as RegExp)).toEqual([
      "Main benchmark duration is started for thread #0.",
    ]);
    expect(marked(H2LOAD_MARKS["window-end"] as RegExp)).toEqual([
      "Main benchmark duration is over for thread #0. Stopping all clients.",
    ]);
  });

  it("takes latencies from the log's status-200 lines only, in milliseconds", () => {
    const log = [
      "1796115821828591\t200\t1000",
      "1796115821828592\t200\t3000",
      "1796115821828593\t0\t9000000",
      "1796115821828594\t200\t2000",
      "1796115821828595\t503\t7000000",
      "",
    ].join("\n");
    expect(latencyFromLog(log)).toEqual({ calls: 3, p50Ms: 2, p90Ms: 3, p99Ms: 3 });
  });

  it("asks for one thread, a warm-up and a window in ms, and gRPC's headers", () => {
    const args = h2loadArgs({
      address: "127.0.0.1:8080",
      path: "/grpc.health.v1.Health/Check",
      bodyFile: "body.bin",
      logFile: "requests.log",
      connections: 4,
      streams: 16,
      warmupMs: 2_000,
      windowMs: 8_000,
    });
    expect(args.join(" ")).toBe(
      "-c 4 -m 16 -t 1 --warm-up-time 2000ms -D 8000ms -d body.bin -H content-type: application/grpc -H te: trailers --log-file requests.log http://127.0.0.1:8080/grpc.health.v1.Health/Check",
    );
  });
});

describe("redis-benchmark", () => {
  it("reads rps and latencies from its CSV", () => {
    const csv = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"XADD bench:floor * f v","2242.15","0.441","0.136","0.191","2.151","4.127","10.087"
`;
    expect(parseRedisBenchmarkCsv(csv)).toEqual({ rps: 2242.15, p50Ms: 0.191, p99Ms: 4.127 });
  });

  it("refuses output that is not its CSV", () => {
    expect(() => parseRedisBenchmarkCsv("Could not connect to Redis at 127.0.0.1:1")).toThrow(
      /no CSV/,
    );
  });
});

describe("stats", () => {
  it("picks percentiles of sorted values and medians of any order", () => {
    expect(percentile([], 50)).toBe(0);
    expect(percentile([1, 2, 3, 4], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4], 99)).toBe(4);
    expect(median([5, 1, 3])).toBe(3);
    expect(median([])).toBeNaN();
    expect(latencyOf([3, 1, 2])).toEqual({ p50Ms: 2, p90Ms: 3, p99Ms: 3 });
  });
});
