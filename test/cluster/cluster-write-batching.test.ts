import type { Socket } from "node:net";
import type { Cluster } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { connectRedis } from "../../server/redis/redis-client.js";
import { callScript, flatScript } from "../../server/redis/script-call.js";
import { COMMANDS_PER_WRITE } from "../../server/redis/turn-waits.js";
import { sharedRedisUrl, uniqueId } from "../support/harness.js";
import { countWrites } from "../support/socket-writes.js";

/** Sets `KEYS[1]` to `ARGV[1]`: a script called as the service calls its own. */
const SET = flatScript("setIt", {
  lua: "return redis.call('SET', KEYS[1], ARGV[1])",
  numberOfKeys: 1,
});

let cluster: Cluster;
beforeAll(async () => {
  cluster = connectRedis(sharedRedisUrl()) as Cluster;
  await cluster.ping();
});
afterAll(() => cluster.disconnect());

test("each node's connection writes one turn's script calls for its slots eight to a write", async () => {
  const nodes = cluster.nodes("master");
  expect(nodes.length).toBe(3);
  await Promise.all(nodes.map((node) => node.ping()));
  const run = uniqueId("batch");
  // 60 keys of 60 hash tags: every primary holds some of them.
  const keys = Array.from({ length: 60 }, (_, i) => `{${run}-${i}}`);
  const held = new Map(nodes.map((node) => [`${node.options.host}:${node.options.port}`, 0]));
  for (const key of keys) {
    const slot = Number(await cluster.cluster("KEYSLOT", key));
    const owner = cluster.slots[slot]?.[0] as string;
    held.set(owner, (held.get(owner) as number) + 1);
  }
  const counters = nodes.map((node) => countWrites(node.stream as Socket));
  const replies = await Promise.all(
    keys.map((key, i) => callScript(cluster, SET, [key, String(i)])),
  );
  expect(replies).toEqual(keys.map(() => "OK"));
  expect([...held.values()].every((n) => n > COMMANDS_PER_WRITE)).toBe(true);
  expect(counters.map((c) => c.writes)).toEqual(
    [...held.values()].map((n) => Math.ceil(n / COMMANDS_PER_WRITE)),
  );
  expect(await cluster.get(keys[7] as string)).toBe("7");
  await Promise.all(keys.map((key) => cluster.del(key)));
});
