import { Redis, Cluster } from "ioredis";
import { startRedisCluster } from "./test/support/redis-cluster.js";
import { connectRedis, subscriberConnection } from "./server/redis/redis-client.js";
const c = await startRedisCluster();
try {
  await c.waitHealthy();
  const main = connectRedis(c.url) as Cluster;
  const sub = subscriberConnection(main) as Cluster;
  await sub.ssubscribe("suggest:{s1}:start-results");
  const count = async () => { const out: string[] = []; for (const n of c.nodes) { const r = new Redis(n.port); const l = (await r.client("LIST")) as string; out.push(`${n.port}:` + l.split("\n").filter((x) => x.includes("name=")).map((x) => /name=(\S*)/.exec(x)?.[1] + "/" + /cmd=(\S*)/.exec(x)?.[1]).join(",")); r.disconnect(); } return out; };
  console.log("slot node", (await c.nodeOfSlot(await c.keySlot("suggest:{s1}:start-results"))).port);
  console.log((await count()).join("\n"));
  sub.disconnect(); main.disconnect();
} finally { await c.stop(); }
