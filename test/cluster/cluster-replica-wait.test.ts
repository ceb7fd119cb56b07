import { rmSync } from "node:fs";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { SuggestServer } from "../../server/server.js";
import { sessionKeys } from "../../server/store/keys.js";
import {
  type Clients,
  connectErrorOf,
  eventually,
  grpcClients,
  putSession,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import {
  type ClusterNode,
  type LocalRedisCluster,
  replicasOnline,
  replicationInfo,
  startRedisCluster,
} from "../support/redis-cluster.js";
import { offer, offeredRecords } from "../support/suggest.js";

// 3 primaries and 3 replicas of this file's own (AOF on, appendfsync always); the test
// stops a replica, then loses its primary's machine (kill -9, data folder removed).
let cluster: LocalRedisCluster;
let server: SuggestServer;
let clients: Clients;
beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 1, nodeTimeoutMs: 1_000 });
  await replicasOnline(cluster.nodes.slice(0, 3));
  server = await startTestServer(cluster.url, {
    redisWaitReplicas: 1,
    redisWaitTimeoutMs: 300,
  });
  clients = grpcClients(server.url);
}, 90_000);
afterAll(async () => {
  await server?.close();
  await cluster?.stop();
});

/** A new session (in no workspace) whose keys live on `node`. */
async function sessionOn(node: ClusterNode): Promise<string> {
  for (;;) {
    const sessionId = uniqueId();
    const slot = await cluster.keySlot(sessionKeys(sessionId).log);
    if ((await cluster.nodeOfSlot(slot)) === node) return sessionId;
  }
}

test("REDIS_WAIT_REPLICAS=1: a replica down, then its primary's machine lost: every acknowledged offer reads back; unconfirmed calls retried once the replica is back record one offer", async () => {
  const primary = cluster.nodes[0] as ClusterNode;
  let replicaNode: ClusterNode | undefined;
  for (const n of cluster.nodes.slice(3)) {
    if (new RegExp(`^master_port:${primary.port}\\r?$`, "m").test(await replicationInfo(n)))
      replicaNode = n;
  }
  if (replicaNode === undefined) throw new Error("no replica of the first primary");
  const sessions: string[] = [];
  for (let i = 0; i < 6; i++) {
    const sessionId = await sessionOn(primary);
    await putSession(clients, { sessionId, workspaceId: "" });
    sessions.push(sessionId);
  }
  const acknowledged = new Map<string, string>();
  for (const sessionId of sessions.slice(0, 3)) {
    const res = await offer(clients, { sessionId, toolCallId: `before-${sessionId}` });
    acknowledged.set(sessionId, res.suggestion?.id ?? "");
  }

  // The replica down: writes on its primary are not confirmed.
  await cluster.kill(replicaNode);
  const unconfirmed = sessions.slice(3).map((sessionId) => ({
    sessionId,
    turnId: `turn-${sessionId}`,
    toolCallId: `during-${sessionId}`,
  }));
  for (const call of unconfirmed) {
    const err = await connectErrorOf(offer(clients, call));
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toBe("the write was not confirmed by 1 replicas");
  }

  // The replica back: the same calls, retried, are acknowledged, each once.
  await cluster.restart(replicaNode);
  await eventually(
    async () => /^slave0:.*state=online/m.test(await replicationInfo(primary)),
    30_000,
  );
  for (const call of unconfirmed) {
    const res = await offer(clients, call);
    acknowledged.set(call.sessionId, res.suggestion?.id ?? "");
  }

  // The primary's machine lost: killed, its data folder gone; the replica takes over.
  await cluster.kill(primary);
  rmSync(primary.dir, { recursive: true, force: true });
  const slot = await cluster.keySlot(sessionKeys(sessions[0] as string).log);
  await eventually(async () => {
    try {
      return (await cluster.nodeOfSlot(slot)) === replicaNode;
    } catch {
      return false;
    }
  }, 30_000);

  for (const [sessionId, id] of acknowledged) {
    let open: string[] = [];
    await eventually(async () => {
      try {
        open = (await clients.suggestions.listSuggestions({ sessionId })).open.map((s) => s.id);
        return true;
      } catch {
        return false;
      }
    }, 15_000);
    expect(open).toEqual([id]);
    expect(await offeredRecords(server.redis, sessionId)).toHaveLength(1);
  }
});
