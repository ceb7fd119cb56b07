import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import {
  confirmAfter,
  notedLast,
  TurnCommand,
  UTF8_REPLY,
} from "../../server/redis/write-confirm.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { uniqueId } from "../support/harness.js";
import {
  type ClusterNode,
  type LocalRedisCluster,
  replicasOnline,
  replicationInfo,
  startRedisCluster,
} from "../support/redis-cluster.js";

// 3 primaries and 3 replicas of this file's own: a replica is stopped and slots are moved
// under a client that still maps them to their old primary. A write Redis redirects
// (MOVED) is written again on another node, after its first node's WAIT: only a WAIT on
// the node that took it may confirm it.
let cluster: LocalRedisCluster;
let client: RedisClient;
beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 1, nodeTimeoutMs: 5_000 });
  await replicasOnline(cluster.nodes.slice(0, 3));
  client = createRedisClient(cluster.url, { replicas: 1, timeoutMs: 300 });
  client.on("error", () => undefined);
}, 90_000);
afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

/** A new key whose slot is on `node`. */
async function keyOn(node: ClusterNode): Promise<string> {
  for (;;) {
    const key = `moves:{${uniqueId()}}`;
    if ((await cluster.nodeOfSlot(await cluster.keySlot(key))) === node) return key;
  }
}

const set = (key: string, value: string) =>
  confirmAfter(
    client,
    key,
    (place) =>
      client.sendCommand(
        new TurnCommand(undefined, "set", [key, value], UTF8_REPLY, place),
      ) as Promise<unknown>,
  );
const multiSet = (key: string, value: string) =>
  confirmAfter(client, key, (place) => notedLast(client.multi().set(key, value), place).exec());

test("a write redirected to a primary whose replica is down fails unconfirmed; redirected to one whose replica is up, it is acknowledged", async () => {
  const [a, b, c] = cluster.nodes.slice(0, 3) as [ClusterNode, ClusterNode, ClusterNode];
  let replicaOfB: ClusterNode | undefined;
  for (const n of cluster.nodes.slice(3)) {
    if (new RegExp(`^master_port:${b.port}\\r?$`, "m").test(await replicationInfo(n)))
      replicaOfB = n;
  }
  expect(replicaOfB).toBeDefined();
  const keys = [await keyOn(a), await keyOn(a), await keyOn(a), await keyOn(a)];
  // The client learns every key's slot on A, acknowledged there.
  for (const key of keys) expect(await set(key, "0")).toBe("OK");
  const onB = await keyOn(b);
  await cluster.kill(replicaOfB as ClusterNode);
  // B's own writes: no replica confirms them.
  await expect(set(onB, "1")).rejects.toThrow("the write was not confirmed by 1 replicas");

  const [toB, toBInMulti, toC, toCInMulti] = keys as [string, string, string, string];
  for (const key of [toB, toBInMulti]) await cluster.moveSlot(await cluster.keySlot(key), b);
  for (const key of [toC, toCInMulti]) await cluster.moveSlot(await cluster.keySlot(key), c);
  // Each is answered MOVED by A, whose WAIT (its replica is up) must not count for it.
  await expect(set(toB, "1")).rejects.toThrow("the write was not confirmed by 1 replicas");
  await expect(multiSet(toBInMulti, "1")).rejects.toThrow(
    "the write was not confirmed by 1 replicas",
  );
  expect(await set(toC, "1")).toBe("OK");
  const replies = await multiSet(toCInMulti, "1");
  expect(replies?.[0]).toEqual([null, "OK"]);
  // Where each landed: on its new primary.
  const nodeB = new Redis(b.port, "127.0.0.1");
  const nodeC = new Redis(c.port, "127.0.0.1");
  try {
    expect(await nodeB.get(toB)).toBe("1");
    expect(await nodeC.get(toC)).toBe("1");
    expect(await nodeC.get(toCInMulti)).toBe("1");
  } finally {
    nodeB.disconnect();
    nodeC.disconnect();
  }
}, 60_000);
