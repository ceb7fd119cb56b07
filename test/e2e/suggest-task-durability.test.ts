import { ConnectError } from "@connectrpc/connect";
import { afterEach, expect, test } from "vitest";
import {
  grpcClients,
  ownRedis,
  putSession,
  redisClient,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";
import { offer, offeredRecords } from "../support/suggest.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

test("a retried tool call answers the first result after the server restarted", async () => {
  const redisServer = await ownRedis();
  cleanups.push(redisServer.remove, () => redisServer.stop());
  const sessionId = uniqueId();

  const first = await spawnService(redisServer.url);
  const firstClients = grpcClients(first.url);
  await putSession(firstClients, { sessionId });
  const answer = await offer(firstClients, { sessionId, turnId: "t1", toolCallId: "call-1" });
  await first.kill("SIGKILL");

  const second = await spawnService(redisServer.url);
  cleanups.push(() => second.kill("SIGTERM"));
  const retried = await offer(grpcClients(second.url), {
    sessionId,
    turnId: "t1",
    toolCallId: "call-1",
  });
  expect(retried).toEqual(answer);
  const redis = redisClient(redisServer.url);
  expect(await offeredRecords(redis, sessionId)).toHaveLength(1);
  redis.disconnect();
});

test("after kill -9 of the service and of Redis, every acknowledged offer is on the stream", async () => {
  const redisServer = await ownRedis();
  cleanups.push(redisServer.remove);
  const service = await spawnService(redisServer.url);
  const clients = grpcClients(service.url);
  const sessions = Array.from({ length: 20 }, () => uniqueId());
  for (const sessionId of sessions) await putSession(clients, { sessionId });

  // A steady stream of offers over 20 sessions; both processes die in the middle of it.
  const acknowledged = new Map<string, string[]>(sessions.map((s) => [s, []]));
  let stop = false;
  const writers = sessions.map(async (sessionId) => {
    for (let i = 0; i < 3 && !stop; i++) {
      try {
        const res = await offer(clients, { sessionId, turnId: `t${i}` });
        acknowledged.get(sessionId)?.push(res.suggestion?.id ?? "");
      } catch (err) {
        if (!(err instanceof ConnectError)) throw err;
        return;
      }
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 150));
  await Promise.all([service.kill("SIGKILL"), redisServer.kill()]);
  stop = true;
  await Promise.all(writers);
  const total = [...acknowledged.values()].reduce((n, ids) => n + ids.length, 0);
  expect(total).toBeGreaterThan(0);

  const restarted = await startTestRedis({ dir: redisServer.dir, port: redisServer.port });
  cleanups.push(() => restarted.stop());
  const redis = redisClient(restarted.url);
  for (const [sessionId, ids] of acknowledged) {
    const onStream = (await offeredRecords(redis, sessionId)).map((r) => r.id);
    for (const id of ids) expect(onStream).toContain(id);
  }
  redis.disconnect();
});
