/** 10,000 idle watchers on one instance: memory, Redis connections and delivery time. */
import { spawn } from "node:child_process";
import { Redis } from "ioredis";
import { rssMb } from "./measure.js";

const WATCHERS = Number(process.env.BENCH_WATCHERS ?? 10_000);

/** Runs bench/watch-load.ts against the service and reads the service while it watches. */
export async function measureWatchers(
  address: string,
  serverPid: number,
  redisUrl: string,
  sessions: string[],
  measured: string[],
): Promise<Record<string, unknown>> {
  const rssBeforeMb = rssMb(serverPid);
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "bench/watch-load.ts",
      JSON.stringify({ address, watchers: WATCHERS, sessions, measured }),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const redis = new Redis(redisUrl);
  let whileWatching: Record<string, number> = {};
  const result = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl = buffer.indexOf("\n");
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.startsWith("watching")) {
          void redis.client("LIST").then((list) => {
            whileWatching = {
              openedInSeconds: Number(line.split(" ")[1]),
              serverRssMb: rssMb(serverPid),
              // Every connection but this one belongs to the service.
              serverRedisConnections: String(list).trim().split("\n").length - 1,
            };
          });
        } else if (line.startsWith("{")) resolve(JSON.parse(line) as Record<string, unknown>);
        nl = buffer.indexOf("\n");
      }
    });
    child.once("exit", (code) =>
      code === 0 ? undefined : reject(new Error(`watch-load exited ${code}`)),
    );
  });
  redis.disconnect();
  return { rssBeforeMb, ...whileWatching, ...result };
}
