import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { sessionKeys } from "../../server/store/keys.js";
import { putSession, uniqueId } from "../support/harness.js";
import { ids, watch } from "../support/lists.js";
import {
  type ClusterNode,
  type LocalRedisCluster,
  startRedisCluster,
} from "../support/redis-cluster.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

// A cluster of this file's own, 3 primaries with one replica each, whose slots it moves
// and whose primaries it kills, under a server that watches a session of that slot.
let cluster: LocalRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 1, nodeTimeoutMs: 1_000 });
});
afterAll(async () => {
  await cluster?.stop();
});
const t = useTestServer({ redisUrl: () => cluster.url });

/** A watched session with its slot and primary, the watch open on its first lists. */
async function watchedSession() {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const slot = await cluster.keySlot(sessionKeys(sessionId).log);
  const w = watch(t.clients, sessionId);
  await w.waitFor(() => true);
  return { sessionId, slot, w, primary: await cluster.nodeOfSlot(slot) };
}

/** Whether `node` holds the session's shard channel for a subscriber (SHARDNUMSUB). */
async function holds(node: ClusterNode, sessionId: string): Promise<boolean> {
  const r = new Redis(node.port, "127.0.0.1", { maxRetriesPerRequest: 0 });
  try {
    const reply = (await r.pubsub("SHARDNUMSUB", sessionKeys(sessionId).changes)) as [
      string,
      number,
    ];
    return Number(reply[1]) > 0;
  } finally {
    r.disconnect();
  }
}

/** An offer, tried again while the cluster settles after a move or a failover. */
async function offerSoon(sessionId: string, title: string): Promise<string> {
  const until = Date.now() + 20_000;
  for (;;) {
    try {
      return (await offerOne(t.clients, sessionId, title)).id;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

test("a watched session's slot moves to another primary: the watcher sees the next change", async () => {
  const { sessionId, slot, w, primary } = await watchedSession();
  const primaries = cluster.nodes.filter((n) => n !== primary);
  // Another primary: one that serves some slot.
  let target: ClusterNode | undefined;
  for (const s of [0, 5_500, 11_000, 16_383]) {
    const node = await cluster.nodeOfSlot(s);
    if (node !== primary && primaries.includes(node)) target = node;
  }
  if (target === undefined) throw new Error("no other primary");
  await cluster.moveSlot(slot, target);
  expect(await cluster.nodeOfSlot(slot)).toBe(target);

  const offered = await offerSoon(sessionId, "After the move");
  await w.waitFor((m) => ids(m.open).includes(offered), 0, 10_000);
  // The subscription followed the slot.
  const until = Date.now() + 10_000;
  while (!(await holds(target, sessionId)) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(await holds(target, sessionId)).toBe(true);
  expect(await holds(primary, sessionId)).toBe(false);
  w.cancel();
  await w.ended;
}, 60_000);

test("a watched session's primary fails over to its replica: the watcher sees the next change", async () => {
  const { sessionId, slot, w, primary } = await watchedSession();
  // Replication is asynchronous: the session's records reach the replica first (a write
  // of this connection, then WAIT for it, covers every write before it).
  const r = new Redis(primary.port, "127.0.0.1", { maxRetriesPerRequest: 0 });
  await r.set(`test:{${sessionId}}:synced`, "1");
  expect(await r.wait(1, 10_000)).toBe(1);
  r.disconnect();
  await cluster.kill(primary);
  // Its replica is promoted once the others mark it failing (cluster-node-timeout).
  const until = Date.now() + 30_000;
  while ((await cluster.nodeOfSlot(slot)) === primary && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(await cluster.nodeOfSlot(slot)).not.toBe(primary);

  const offered = await offerSoon(sessionId, "After the failover");
  await w.waitFor((m) => ids(m.open).includes(offered), 0, 10_000);
  w.cancel();
  await w.ended;
  await cluster.restart(primary);
  await cluster.waitHealthy();
}, 60_000);
