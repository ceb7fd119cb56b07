/**
 * h2load (Debian `nghttp2-client`, a C HTTP/2 load generator) as the bench drives it:
 * one fixed gRPC-framed request body posted over and over, a warm-up, then a measured
 * window. h2load sees HTTP statuses only, not `grpc-status`; the runner therefore
 * checks, with one call before and one after, that the body is answered OK, which
 * holds for every call of a read that changes nothing. The parsers are pure and pinned
 * by test/bench/parsers.test.ts.
 */
import { execFileSync } from "node:child_process";
import { type Latency, latencyOf } from "./stats.js";

/** What one h2load run does. */
export interface H2loadConfig {
  /** host:port of the server. */
  readonly address: string;
  /** The gRPC method path, `/package.Service/Method`. */
  readonly path: string;
  /** A file holding the gRPC-framed request body. */
  readonly bodyFile: string;
  readonly connections: number;
  /** Streams in flight on each connection. */
  readonly streams: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  /** Where h2load writes one line per measured request (start, status, duration). */
  readonly logFile: string;
  /** More request headers (`authorization: Bearer ...`). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** h2load's arguments for `config`: one thread, timing-based, gRPC headers. */
export function h2loadArgs(config: H2loadConfig): string[] {
  return [
    "-c",
    String(config.connections),
    "-m",
    String(config.streams),
    "-t",
    "1",
    "--warm-up-time",
    `${Math.round(config.warmupMs)}ms`,
    "-D",
    `${Math.round(config.windowMs)}ms`,
    "-d",
    config.bodyFile,
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    ...Object.entries(config.headers ?? {}).flatMap(([name, value]) => ["-H", `${name}: ${value}`]),
    "--log-file",
    config.logFile,
    `http://${config.address}${config.path}`,
  ];
}

/** The lines h2load prints the moment its measured window opens and closes. */
export const H2LOAD_MARKS: Readonly<Record<string, RegExp>> = {
  "window-start": /^Main benchmark duration is started/,
  "window-end": /^Main benchmark duration is over/,
};

/** The counts of h2load's closing summary. */
export interface H2loadSummary {
  readonly total: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly errored: number;
  readonly timeout: number;
  /** Responses with an HTTP status other than 2xx. */
  readonly non2xx: number;
  /** Requests per second over the measured window, as h2load computed it. */
  readonly requestsPerSecond: number;
}

/** Reads h2load's summary from its standard output; throws when it is not there. */
export function parseH2loadSummary(stdout: string): H2loadSummary {
  const finished = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(stdout);
  const requests =
    /requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(
      stdout,
    );
  const codes = /status codes: \d+ 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(stdout);
  if (finished === null || requests === null || codes === null) {
    throw new Error(`h2load printed no summary:\n${stdout.slice(-2_000)}`);
  }
  const n = (m: RegExpExecArray, i: number) => Number(m[i]);
  return {
    requestsPerSecond: n(finished, 1),
    total: n(requests, 1),
    succeeded: n(requests, 2),
    failed: n(requests, 3),
    errored: n(requests, 4),
    timeout: n(requests, 5),
    non2xx: n(codes, 1) + n(codes, 2) + n(codes, 3),
  };
}

/**
 * Latencies of the measured requests from h2load's `--log-file` (tab-separated: start
 * in µs since the epoch, HTTP status, µs to the end of the response). Requests cut off
 * when the window closed carry status 0 and are left out, like any non-200 one.
 */
export function latencyFromLog(text: string): Latency & { readonly calls: number } {
  const ms: number[] = [];
  for (const line of text.split("\n")) {
    const [, status, duration] = line.split("\t");
    if (status === "200" && duration !== undefined) ms.push(Number(duration) / 1_000);
  }
  return { calls: ms.length, ...latencyOf(ms) };
}

/** Whether h2load is installed; the bench says how to install it when it is not. */
export function h2loadVersion(): string | undefined {
  try {
    return execFileSync("h2load", ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

/** What the bench prints when h2load is missing. */
export const H2LOAD_MISSING =
  "h2load was not found on PATH. Install it from the OS packages (Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y nghttp2-client; macOS: brew install nghttp2) and run npm run bench again.";
