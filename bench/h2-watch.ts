/**
 * Server CPU per delivered WatchSuggestions message with many watchers of one chat
 * (target: at most 10 µs): WATCHERS streams over 4 raw node:http2 connections, then
 * CHANGES dismiss/restore settlements one at a time, each awaited until every watcher
 * has its message. Used by bench/h2-rows.ts.
 */
import http2 from "node:http2";
import { WATCH_SUGGESTIONS_PATH } from "./grpc-frames.js";
import { cpuSeconds } from "./measure.js";

const WATCHERS = Number(process.env.BENCH_WATCH_STREAMS ?? 1_000);
const CHANGES = Number(process.env.BENCH_WATCH_CHANGES ?? 100);

/** Opens the watchers, makes the changes, answers server CPU µs per delivered message. */
export async function watchCost(
  port: number,
  pid: number,
  watchBody: Buffer,
  change: (i: number) => Promise<void>,
): Promise<{ watchers: number; changes: number; usPerDelivery: number }> {
  const sessions = Array.from({ length: 4 }, () => http2.connect(`http://127.0.0.1:${port}`));
  let delivered = 0;
  let wake: (() => void) | undefined;
  const streams = Array.from({ length: WATCHERS }, (_, i) => {
    const s = sessions[i % 4] as http2.ClientHttp2Session;
    const req = s.request({
      ":method": "POST",
      ":path": WATCH_SUGGESTIONS_PATH,
      "content-type": "application/grpc",
      te: "trailers",
    });
    // Each message is one small frame, so a data event here is one delivered message.
    req.on("data", () => {
      delivered++;
      wake?.();
    });
    req.on("error", () => {});
    req.end(watchBody);
    return req;
  });
  const until = async (n: number) => {
    while (delivered < n) await new Promise<void>((r) => (wake = r));
  };
  await until(WATCHERS);
  const before = cpuSeconds(pid);
  for (let i = 0; i < CHANGES; i++) {
    await change(i);
    await until(WATCHERS * (i + 2));
  }
  const cpu = cpuSeconds(pid) - before;
  for (const req of streams) req.close();
  for (const s of sessions) s.close();
  return {
    watchers: WATCHERS,
    changes: CHANGES,
    usPerDelivery: (cpu / (CHANGES * WATCHERS)) * 1e6,
  };
}
