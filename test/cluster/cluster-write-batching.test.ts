import type { Socket } from "node:net";
import type { Cluster } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { connectRedis } from "../../server/redis/redis-client.js";
import { sharedRedisUrl, uniqueId } from "../support/harness.js";
import { countWrites } from "../support/socket-writes.js";

let cluster: Cluster;
beforeAll(async () => {
  cluster = connectRedis(sharedRedisUrl()) as Cluster;
  await cluster.ping();
});
afterAll(() => cluster.disconnect());

test("each node's connection writes one turn's commands for its slots in one write", async () => {
  const nodes = cluster.nodes("master");
  expect(nodes.length).toBe(3);
  await Promise.all(nodes.map((node) => node.ping()));
  const counters = nodes.map((node) => countWrites(node.stream as Socket));
  const run = uniqueId("batch");
  // 60 keys of 60 hash tags: every primary holds some of them.
  const keys = Array.from({ length: 60 }, (_, i) => `{${run}-${i}}`);
  const replies = await Promise.all(keys.map((key, i) => cluster.set(key, String(i))));
  expect(replies).toEqual(keys.map(() => "OK"));
  expect(counters.map((c) => c.writes)).toEqual([1, 1, 1]);
  expect(await cluster.get(keys[7] as string)).toBe("7");
  await Promise.all(keys.map((key) => cluster.del(key)));
});
