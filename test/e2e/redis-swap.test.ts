import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { Redis } from "ioredis";
import { expect, onTestFailed, onTestFinished, test } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as Serving,
} from "../../gen/grpc/health/v1/health_pb.js";
import { startRedisServer } from "../../server/redis/redis-server-process.js";
import {
  eventually,
  grpcClients,
  ownRedis,
  spawnService,
  tempDir,
  uniqueId,
} from "../support/harness.js";
import {
  agentLoad,
  expectSameProcessMissedNothing,
  openWatches,
  readyz,
  untilServed,
} from "../support/swap-drill.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

// The Redis behind an unchanged `redis://` address is replaced or restarted while agents
// offer and people watch: the same service process serves again within 2 s of a Redis
// that answers, every watch stream sees the next change, and no acknowledged offer is
// lost. The address is a TCP proxy of the test's own; when its primary dies it holds
// every connection open and silent for longer than a Redis command's 5 s timeout (a
// managed endpoint moving to the promoted replica), then forwards to the replica.

async function replicaOnline(primaryPort: number): Promise<void> {
  const client = new Redis({ port: primaryPort, lazyConnect: true });
  client.on("error", () => {});
  try {
    await client.connect();
    const until = Date.now() + 20_000;
    while (!/^slave\d+:.*state=online/m.test(await client.info("replication"))) {
      if (Date.now() > until) throw new Error("the replica never came online");
      await sleep(50);
    }
  } finally {
    client.disconnect();
  }
}

test("the primary behind the address dies, connections hang 6.5 s, the promoted replica takes the address: served again within 2 s, nothing missed", async () => {
  // The primary, its replica, and the replica's own replica, which stays the promoted
  // one's replica: writes are confirmed (REDIS_WAIT_REPLICAS=1) before and after.
  const primary = await ownRedis();
  const replicaDir = tempDir("replica");
  const secondDir = tempDir("second");
  const replica = await startRedisServer({
    dir: replicaDir.dir,
    extraArgs: ["--replicaof", "127.0.0.1", String(primary.port)],
  });
  const second = await startRedisServer({
    dir: secondDir.dir,
    extraArgs: ["--replicaof", "127.0.0.1", String(replica.port)],
  });
  let proxy: TcpProxy | undefined;
  onTestFinished(async () => {
    await proxy?.close();
    for (const r of [primary, replica, second]) await r.kill().catch(() => {});
    for (const d of [primary, replicaDir, secondDir]) d.remove();
  });
  await replicaOnline(replica.port);
  await replicaOnline(primary.port);
  proxy = await startTcpProxy(primary);
  const service = await spawnService(proxy.url, { REDIS_WAIT_REPLICAS: "1" });
  onTestFinished(() => service.kill().then(() => {}));
  onTestFailed(() =>
    console.info(
      service
        .output()
        .split("\n")
        .filter((line) => !line.includes('"level":30') || /ListSuggestions|Redis/.test(line))
        .join("\n")
        .slice(-12_000),
    ),
  );
  const pid = service.child.pid;
  const clients = grpcClients(service.url);
  const watched = await openWatches(clients, uniqueId("ws"));
  const load = agentLoad(clients, watched.workspaceId, 3);
  await sleep(1_000);

  proxy.hold();
  await primary.kill();
  await sleep(3_000);
  // No Redis answers: not ready, on both probes, though every connection is still open.
  expect(await readyz(service.url)).toEqual([503, "not ready: Redis does not answer\n"]);
  const health = createClient(Health, clients.transport);
  expect((await health.check({ service: "" })).status).toBe(Serving.NOT_SERVING);
  await sleep(3_500);
  const promoted = new Redis({ port: replica.port });
  promoted.on("error", () => {});
  await promoted.replicaof("NO", "ONE");
  promoted.disconnect();
  proxy.forward(replica);
  const servedMs = await untilServed(clients, watched.sessions[0]?.sessionId ?? "");
  // Ready again as soon as the answer watch hears the new primary.
  await eventually(async () => (await readyz(service.url))[0] === 200, 2_000);
  expect((await health.check({ service: "" })).status).toBe(Serving.SERVING);
  await expectSameProcessMissedNothing(service, pid, load, clients, watched);
  expect(service.output()).not.toMatch(/unhandled|uncaught/i);
  console.info(`served again ${servedMs} ms after the switch`);
  expect(servedMs).toBeLessThan(2_000);
}, 120_000);

test("the one Redis behind the address restarts (AOF, same data folder): served again within 2 s, nothing missed", async () => {
  const first = await ownRedis();
  let redis = first;
  let proxy: TcpProxy | undefined;
  onTestFinished(async () => {
    await proxy?.close();
    await redis.kill().catch(() => {});
    first.remove();
  });
  proxy = await startTcpProxy(first);
  const service = await spawnService(proxy.url);
  onTestFinished(() => service.kill().then(() => {}));
  onTestFailed(() => console.info(service.output().slice(-6_000)));
  const pid = service.child.pid;
  const clients = grpcClients(service.url);
  const watched = await openWatches(clients, uniqueId("ws"));
  const load = agentLoad(clients, watched.workspaceId, 3);
  await sleep(1_000);

  await first.kill();
  await sleep(3_000);
  redis = Object.assign(await startRedisServer({ dir: first.dir, port: first.port }), {
    remove: first.remove,
  });
  const servedMs = await untilServed(clients, watched.sessions[0]?.sessionId ?? "");
  await expectSameProcessMissedNothing(service, pid, load, clients, watched);
  console.info(`served again ${servedMs} ms after the restart`);
  expect(servedMs).toBeLessThan(2_000);
}, 120_000);
