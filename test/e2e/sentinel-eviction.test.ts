import { createClient } from "@connectrpc/connect";
import { expect, onTestFailed, onTestFinished, test } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as Serving,
} from "../../gen/grpc/health/v1/health_pb.js";
import { eventually, grpcClients, putSession, spawnService, uniqueId } from "../support/harness.js";
import { startSentinelSet } from "../support/redis-sentinel.js";
import { offer } from "../support/suggest.js";
import { readyz } from "../support/swap-drill.js";

// The sentinels promote a replica whose maxmemory-policy evicts: the service does not
// use it in silence. It turns NOT_SERVING (readiness and grpc.health.v1) with an error
// log naming the policy and the node, and serves again once a later failover names a
// primary that does not evict (the policy is checked on each connection to a primary).

test("an evicting replica promoted is refused loudly, and the next failover to a sound one serves again", async () => {
  // Replica 1 evicts and is the sentinels' first choice; replica 2 is the next.
  const set = await startSentinelSet({
    replicas: 2,
    sentinels: 3,
    nodeArgs: (i) =>
      i === 1
        ? ["--maxmemory-policy", "allkeys-lru", "--replica-priority", "10"]
        : i === 2
          ? ["--replica-priority", "50"]
          : [],
  });
  onTestFinished(() => set.close());
  const [, evicting, sound] = set.nodes;
  if (evicting === undefined || sound === undefined) throw new Error("no replicas");
  const service = await spawnService(set.url);
  onTestFinished(() => service.kill().then(() => {}));
  onTestFailed(() => console.info(service.output().slice(-8_000)));
  const pid = service.child.pid;
  const clients = grpcClients(service.url);
  const health = createClient(Health, clients.transport);
  expect((await readyz(service.url))[0]).toBe(200);
  const switches = await set.switches();
  onTestFinished(() => switches.stop());

  const failover = async () => {
    const sentinel = set.sentinel();
    try {
      await eventually(
        () =>
          sentinel.call("SENTINEL", "FAILOVER", set.name).then(
            () => true,
            () => false,
          ),
        20_000,
      );
    } finally {
      sentinel.disconnect();
    }
  };
  await failover();
  expect((await switches.next(0, 30_000)).port).toBe(evicting.port);
  const problem = `Redis at 127.0.0.1:${evicting.port} has maxmemory-policy allkeys-lru, which evicts keys and would drop acknowledged offers in silence; set maxmemory-policy noeviction there`;
  await eventually(async () => (await readyz(service.url))[0] === 503, 5_000);
  expect(await readyz(service.url)).toEqual([503, `not ready: ${problem}\n`]);
  expect((await health.check({ service: "" })).status).toBe(Serving.NOT_SERVING);
  // The log is written out every second.
  const errorLine = () =>
    service
      .output()
      .split("\n")
      .find((line) => line.includes('"level":50') && line.includes("maxmemory-policy allkeys-lru"));
  await eventually(async () => errorLine() !== undefined, 3_000);
  expect(JSON.parse(errorLine() ?? "{}")).toMatchObject({ problem: "eviction", msg: problem });

  // Once the sentinels can fail over again (their failover-timeout apart), to the sound one.
  await set.settled(1);
  await failover();
  expect((await switches.next(1, 30_000)).port).toBe(sound.port);
  await eventually(async () => (await readyz(service.url))[0] === 200, 5_000);
  expect((await health.check({ service: "" })).status).toBe(Serving.SERVING);
  const sessionId = uniqueId("after");
  await eventually(
    () =>
      putSession(clients, { sessionId })
        .then(() => offer(clients, { sessionId }))
        .then(
          () => true,
          () => false,
        ),
    5_000,
  );
  await eventually(
    async () => /"problem":"eviction","msg":"resolved"/.test(service.output()),
    3_000,
  );
  expect([service.child.pid, service.child.exitCode]).toEqual([pid, null]);
}, 120_000);
