import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { parseRedisUrl } from "../../server/redis/redis-url.js";
import type { SuggestServer } from "../../server/server.js";
import { grpcClients, sharedRedisUrl, startTestServer } from "../support/harness.js";
import { callEveryRpc, documentedAcl, refusedCommands, STORE_USER } from "../support/store-user.js";

/*
 * docs/redis.md's ACL on every node of the suite's cluster: the service, as that user,
 * answers every RPC (its Cluster client's CLUSTER SLOTS and CLUSTER INFO included), and
 * no node refuses it anything but CONFIG GET (test/redis/store-user.test.ts: one server).
 */

const PASSWORD = "cluster-user-password";
let nodes: Redis[] = [];
let server: SuggestServer | undefined;

beforeAll(async () => {
  const target = parseRedisUrl(sharedRedisUrl());
  if (target.kind !== "cluster") throw new Error("the cluster suite runs on a cluster");
  nodes = target.seeds.map((seed) => new Redis(seed.port, seed.host));
  for (const node of nodes) {
    await node.call(...(documentedAcl(PASSWORD) as [string, ...string[]]));
    await node.call("ACL", "LOG", "RESET");
  }
});

afterAll(async () => {
  await server?.close();
  for (const node of nodes) {
    await node.call("ACL", "DELUSER", STORE_USER);
    node.disconnect();
  }
});

test("every RPC works as the documented user on a cluster; no node refuses it but CONFIG GET", async () => {
  const seeds = parseRedisUrl(sharedRedisUrl());
  if (seeds.kind !== "cluster") throw new Error("the cluster suite runs on a cluster");
  const url = `redis+cluster://${STORE_USER}:${PASSWORD}@${seeds.seeds.map((s) => `${s.host}:${s.port}`).join(",")}`;
  server = await startTestServer(url);
  await callEveryRpc(grpcClients(server.url));
  const refused = new Set((await Promise.all(nodes.map(refusedCommands))).flat());
  expect([...refused]).toEqual(["command config|get"]);
});
