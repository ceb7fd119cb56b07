/*
 * What the change notices cost a Redis Cluster as it grows: 3,000 offers on fresh chats
 * (one instance's store, 64 in flight) against a 3-primary and a 9-primary cluster of
 * their own (no replicas), in one run. Prints the Redis CPU per offer over all nodes
 * (utime + stime of each redis-server from /proc/<pid>/stat during the offers, less its
 * idle rate measured just before) and the publish messages each node received over the
 * cluster bus (CLUSTER INFO `cluster_stats_messages_publish*_received`).
 *
 *   node --import tsx bench/cluster-notices.ts
 */
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { type LocalRedisCluster, startRedisCluster } from "../test/support/redis-cluster.js";

const OFFERS = Number(process.env.OFFERS ?? 3_000);
const IN_FLIGHT = 64;
const TICK_US = 1e6 / 100; // USER_HZ

function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

async function busPublishes(cluster: LocalRedisCluster): Promise<number[]> {
  return Promise.all(
    cluster.nodes.map(async (n) => {
      const r = new Redis(n.port, "127.0.0.1");
      const info = (await r.cluster("INFO")) as string;
      r.disconnect();
      let total = 0;
      for (const m of info.matchAll(/^cluster_stats_messages_publish\w*_received:(\d+)/gm)) {
        total += Number(m[1]);
      }
      return total;
    }),
  );
}

async function measure(primaries: number) {
  const cluster = await startRedisCluster({ primaries });
  try {
    const redis = createRedisClient(cluster.url);
    const store = new SuggestionStore(redis);
    await redis.ping();
    const pids = cluster.nodes.map((n) => n.process?.pid as number);
    const idleFrom = pids.map(cpuUs);
    const idleStart = performance.now();
    await new Promise((r) => setTimeout(r, 2_000));
    const idleUsPerMs =
      pids.map(cpuUs).reduce((s, v, i) => s + v - (idleFrom[i] as number), 0) /
      (performance.now() - idleStart);
    const busBefore = await busPublishes(cluster);
    const before = pids.map(cpuUs);
    const start = performance.now();
    let next = 0;
    const run = `${primaries}-${Date.now()}`;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < OFFERS) {
          const i = next++;
          await store.offer(
            `bench-${run}-${i}`,
            {
              id: `o-${i}`,
              turnId: "t",
              toolCallId: "",
              title: "A title",
              tldr: "Worth doing",
              brief: "Do the follow-up.",
            },
            false,
          );
        }
      }),
    );
    const ms = performance.now() - start;
    const used = pids.map(cpuUs).reduce((s, v, i) => s + v - (before[i] as number), 0);
    const busAfter = await busPublishes(cluster);
    redis.disconnect();
    return {
      primaries,
      cpuPerOfferUs: (used - idleUsPerMs * ms) / OFFERS,
      published: busAfter.map((v, i) => v - (busBefore[i] as number)),
    };
  } finally {
    await cluster.stop();
  }
}

const three = await measure(3);
const nine = await measure(9);
console.log("| primaries | Redis CPU per offer, all nodes | publish messages each node received |");
console.log("|---:|---:|---:|");
for (const m of [three, nine]) {
  console.log(
    `| ${m.primaries} | ${m.cpuPerOfferUs.toFixed(0)} µs | ${Math.min(...m.published)} to ${Math.max(...m.published)} |`,
  );
}
console.log(`9 primaries / 3 primaries: ${(nine.cpuPerOfferUs / three.cpuPerOfferUs).toFixed(2)}x`);
