import type { Socket } from "node:net";
import type { Cluster } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { COMMANDS_PER_WRITE, connectRedis } from "../../server/redis/redis-client.js";
import { sharedRedisUrl, uniqueId } from "../support/harness.js";
import { countWrites } from "../support/socket-writes.js";

let cluster: Cluster;
beforeAll(async () => {
  cluster = connectRedis(sharedRedisUrl()) as Cluster;
  await cluster.ping();
});
afterAll(() => cluster.disconnect());

test("each node's connection writes one turn's commands for its slots eight to a write", async () => {
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
  const replies = await Promise.all(keys.map((key, i) => cluster.set(key, String(i))));
  expect(replies).toEqual(keys.map(() => "OK"));
  expect([...held.values()].every((n) => n > COMMANDS_PER_WRITE)).toBe(true);
  expect(counters.map((c) => c.writes)).toEqual(
    [...held.values()].map((n) => Math.ceil(n / COMMANDS_PER_WRITE)),
  );
  expect(await cluster.get(keys[7] as string)).toBe("7");
  await Promise.all(keys.map((key) => cluster.del(key)));
});
