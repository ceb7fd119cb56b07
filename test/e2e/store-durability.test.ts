import { setTimeout as delay } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { connectRedis } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import type { SuggestServer } from "../../server/server.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import {
  connectErrorOf,
  eventually,
  grpcClients,
  ownRedis,
  putSession,
  startTestServer,
  tempDir,
  uniqueId,
} from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";
import { keysOf, offer, offeredRecords, offerOne } from "../support/suggest.js";

// A primary and one replica of this file's own: the tests pause the replica, change the
// primary's memory settings, and start servers that refuse them.
let primary: Awaited<ReturnType<typeof ownRedis>>;
let replica: RedisServerProcess;
let replicaDir: ReturnType<typeof tempDir>;
let admin: Redis;
beforeAll(async () => {
  primary = await ownRedis();
  admin = connectRedis(primary.url) as Redis;
  // The replica's first copy at once, not after the default 5 s of diskless sync delay.
  await admin.config("SET", "repl-diskless-sync-delay", "0");
  replicaDir = tempDir("replica");
  replica = await startTestRedis({
    dir: replicaDir.dir,
    extraArgs: ["--replicaof", "127.0.0.1", String(primary.port)],
  });
  await eventually(async () => /^slave0:.*state=online/m.test(await admin.info("replication")));
});
afterAll(async () => {
  admin.disconnect();
  await replica.stop();
  await primary.stop();
  primary.remove();
  replicaDir.remove();
});

const servers: SuggestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  await admin.config("SET", "maxmemory", "0");
  await admin.config("SET", "maxmemory-policy", "noeviction");
});

async function serve(overrides: Parameters<typeof startTestServer>[1] = {}) {
  const server = await startTestServer(primary.url, overrides);
  servers.push(server);
  return { server, clients: grpcClients(server.url) };
}

test("with REDIS_WAIT_REPLICAS=1, an offer is acknowledged once the replica has it", async () => {
  const { server, clients } = await serve({ redisWaitReplicas: 1, redisWaitTimeoutMs: 2_000 });
  const sessionId = uniqueId("wait");
  await putSession(clients, { sessionId });
  const res = await offer(clients, { sessionId, toolCallId: "call-1" });
  expect(res.suggestion?.title).toMatch(/^Title of/);
  const onReplica = connectRedis(replica.url) as Redis;
  try {
    // Acknowledged means already there: read at once, no waiting.
    const log = await onReplica.xrange(`suggest:{${sessionId}}:log`, "-", "+");
    expect(log.length).toBe((await offeredRecords(server.redis, sessionId)).length);
    expect(log.length).toBe(1);
  } finally {
    onReplica.disconnect();
  }
});

test("a write no replica confirms fails UNAVAILABLE; retried with its tool_call_id once the replica is back, one offer", async () => {
  const { server, clients } = await serve({ redisWaitReplicas: 1, redisWaitTimeoutMs: 300 });
  const sessionId = uniqueId("unconfirmed");
  await putSession(clients, { sessionId });
  process.kill(replica.pid, "SIGSTOP");
  let err: Awaited<ReturnType<typeof connectErrorOf>>;
  try {
    err = await connectErrorOf(offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-x" }));
  } finally {
    process.kill(replica.pid, "SIGCONT");
  }
  expect(err.code).toBe(Code.Unavailable);
  expect(err.rawMessage).toBe("the write was not confirmed by 1 replicas");
  const metrics = await server.telemetry.registry.getSingleMetricAsString(
    "suggest_store_refusals_total",
  );
  expect(metrics).toMatch(/suggest_store_refusals_total\{kind="unconfirmed"\} [1-9]/);
  const again = await offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-x" });
  expect(again.suggestion?.id).toBeTruthy();
  expect(await offeredRecords(server.redis, sessionId)).toHaveLength(1);
});

/** How many times the primary ran `command` (`INFO commandstats`). */
async function commandCalls(command: string): Promise<number> {
  const stats = await admin.info("commandstats");
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, "m").exec(stats)?.[1] ?? 0);
}

test("writes made together share a WAIT: each is on the replica when acknowledged, with fewer WAITs than writes", async () => {
  const { server, clients } = await serve({ redisWaitReplicas: 1, redisWaitTimeoutMs: 2_000 });
  const sessions = Array.from({ length: 48 }, () => uniqueId("together"));
  for (const sessionId of sessions) await putSession(clients, { sessionId });
  const before = { waits: await commandCalls("wait"), offers: await commandCalls("evalsha") };
  const offered = await Promise.all(sessions.map((sessionId) => offerOne(clients, sessionId)));
  const waits = (await commandCalls("wait")) - before.waits;
  const scripts = (await commandCalls("evalsha")) - before.offers;
  expect(scripts).toBeGreaterThanOrEqual(sessions.length);
  expect(waits).toBeGreaterThan(0);
  expect(waits).toBeLessThan(scripts / 2);
  // Settled together too: each dismissal (a MULTI) on the replica once acknowledged.
  await Promise.all(
    sessions.map((sessionId, i) =>
      clients.suggestions.dismissSuggestion({ sessionId, suggestionId: offered[i]?.id ?? "" }),
    ),
  );
  const onReplica = connectRedis(replica.url) as Redis;
  try {
    for (const sessionId of sessions) {
      const log = await onReplica.xrange(`suggest:{${sessionId}}:log`, "-", "+");
      expect(log.length).toBe((await offeredRecords(server.redis, sessionId)).length + 1);
      expect(log).toHaveLength(2);
    }
  } finally {
    onReplica.disconnect();
  }
});

/** An offer in chat `${run}-${i}`, made on `store` as SuggestTask makes one. */
function offerIn(store: SuggestionStore, run: string, i: number) {
  return store.offer(
    `${run}-${i}`,
    {
      id: `o-${i}`,
      turnId: "t",
      toolCallId: "",
      title: "A title",
      tldr: "Worth doing",
      brief: "Do it.",
    },
    false,
  );
}

/** Whether chats `${run}-0` to `${run}-${last}` each hold one record on the replica. */
async function eachOnReplica(run: string, last: number): Promise<void> {
  const onReplica = connectRedis(replica.url) as Redis;
  try {
    for (let i = 0; i <= last; i++) {
      expect(await onReplica.xlen(`suggest:{${run}-${i}}:log`)).toBe(1);
    }
  } finally {
    onReplica.disconnect();
  }
}

test("writes made while a WAIT is out queue behind it and share the next: two WAITs, each write on the replica", async () => {
  const redis = createRedisClient(primary.url, { replicas: 1, timeoutMs: 5_000 });
  const store = new SuggestionStore(redis);
  const run = uniqueId("queued");
  const offerOn = (i: number) => offerIn(store, run, i);
  try {
    await redis.ping();
    const before = await commandCalls("wait");
    process.kill(replica.pid, "SIGSTOP");
    const offers: Promise<unknown>[] = [];
    try {
      // The first offer's WAIT goes out and blocks; twelve more, each in a turn of its
      // own, leave while it is out.
      offers.push(offerOn(0));
      for (let i = 1; i <= 12; i++) {
        await delay(20);
        offers.push(offerOn(i));
      }
      await delay(100);
    } finally {
      process.kill(replica.pid, "SIGCONT");
    }
    await Promise.all(offers);
    expect((await commandCalls("wait")) - before).toBe(2);
    await eachOnReplica(run, 12);
  } finally {
    redis.disconnect();
  }
});

test("writes made while the connection opens owe one WAIT between them, sent once they are written", async () => {
  // Each WAIT holds its connection until a replica answers or it times out: a WAIT apiece
  // would, on a primary with no replica online yet (a failover's first seconds), hold
  // the reads queued behind them for the sum of their timeouts.
  const before = await commandCalls("wait");
  const redis = createRedisClient(primary.url, { replicas: 1, timeoutMs: 2_000 });
  try {
    expect(redis.status).not.toBe("ready");
    const store = new SuggestionStore(redis);
    const run = uniqueId("held");
    await Promise.all(Array.from({ length: 6 }, (_, i) => offerIn(store, run, i)));
    expect((await commandCalls("wait")) - before).toBe(1);
    await eachOnReplica(run, 5);
  } finally {
    redis.disconnect();
  }
});

test("writes made together while no replica confirms all fail UNAVAILABLE", async () => {
  const { clients } = await serve({ redisWaitReplicas: 1, redisWaitTimeoutMs: 300 });
  const sessions = Array.from({ length: 16 }, () => uniqueId("together-unconfirmed"));
  for (const sessionId of sessions) await putSession(clients, { sessionId });
  process.kill(replica.pid, "SIGSTOP");
  let errors: Awaited<ReturnType<typeof connectErrorOf>>[];
  try {
    errors = await Promise.all(
      sessions.map((sessionId) => connectErrorOf(offerOne(clients, sessionId))),
    );
  } finally {
    process.kill(replica.pid, "SIGCONT");
  }
  for (const err of errors) {
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toBe("the write was not confirmed by 1 replicas");
  }
});

test("REDIS_WAIT_REPLICAS above the replicas connected refuses to start, naming both", async () => {
  await expect(startTestServer(primary.url, { redisWaitReplicas: 2 })).rejects.toThrow(
    `REDIS_WAIT_REPLICAS is 2, and Redis at 127.0.0.1:${primary.port} has 1 replica(s) online`,
  );
});

test("an evicting Redis stops the start, naming the policy and the node", async () => {
  await admin.config("SET", "maxmemory-policy", "allkeys-lru");
  await expect(startTestServer(primary.url)).rejects.toThrow(
    `Redis at 127.0.0.1:${primary.port} has maxmemory-policy allkeys-lru,`,
  );
});

test("an evicting policy found on a reconnection makes the health check NOT_SERVING", async () => {
  const { server } = await serve();
  const { createClient } = await import("@connectrpc/connect");
  const { createGrpcTransport } = await import("@connectrpc/connect-node");
  const { Health } = await import("../../gen/grpc/health/v1/health_pb.js");
  const health = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
  expect((await health.check({})).status).toBe(1);
  await admin.config("SET", "maxmemory-policy", "volatile-lru");
  await admin.client("KILL", "TYPE", "normal", "SKIPME", "yes");
  await eventually(async () => (await health.check({})).status === 2);
  await admin.config("SET", "maxmemory-policy", "noeviction");
  await admin.client("KILL", "TYPE", "normal", "SKIPME", "yes");
  await eventually(async () => (await health.check({})).status === 1);
});

test("a disk that refuses writes: UNAVAILABLE naming Redis's cause, counted, NOT_SERVING until it writes again; the retry records one offer", async () => {
  // A Redis of its own whose data folder may be moved at run time (a protected config).
  const own = tempDir("disk");
  const redis = await startTestRedis({
    dir: own.dir,
    extraArgs: ["--enable-protected-configs", "yes"],
  });
  const control = connectRedis(redis.url) as Redis;
  const gone = tempDir("gone");
  try {
    const server = await startTestServer(redis.url);
    servers.push(server);
    const clients = grpcClients(server.url);
    const { createClient } = await import("@connectrpc/connect");
    const { createGrpcTransport } = await import("@connectrpc/connect-node");
    const { Health } = await import("../../gen/grpc/health/v1/health_pb.js");
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    const sessionId = uniqueId("disk");
    await putSession(clients, { sessionId });
    const bgsaveStatus = async () =>
      /^rdb_last_bgsave_status:(\w+)/m.exec(await control.info("persistence"))?.[1];
    // A snapshot into a folder that is gone fails, and Redis then refuses writes (MISCONF).
    await control.config("SET", "save", "3600 1");
    await control.config("SET", "dir", gone.dir);
    gone.remove();
    await control.bgsave();
    await eventually(async () => (await bgsaveStatus()) === "err");
    const err = await connectErrorOf(
      offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-d" }),
    );
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toMatch(
      /^the suggestion store cannot write to its disk \((?:Redis|Valkey) is configured to save RDB snapshots, but it's (currently )?unable to persist to disk/,
    );
    await eventually(async () => (await health.check({})).status === 2);
    // Reads go on from the log, writing nothing: the chat still has no offer.
    const lists = await clients.suggestions.listSuggestions({ sessionId });
    expect([lists.open, lists.settled]).toEqual([[], []]);
    const metrics = await server.telemetry.registry.getSingleMetricAsString(
      "suggest_store_refusals_total",
    );
    expect(metrics).toMatch(/suggest_store_refusals_total\{kind="disk"\} [1-9]/);
    // The folder back: the next snapshot succeeds, and so do writes.
    await control.config("SET", "dir", own.dir);
    await control.bgsave();
    await eventually(async () => (await bgsaveStatus()) === "ok");
    await eventually(async () => (await health.check({})).status === 1);
    expect(await offeredRecords(server.redis, sessionId)).toHaveLength(0);
    await offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-d" });
    await offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-d" });
    expect(await offeredRecords(server.redis, sessionId)).toHaveLength(1);
  } finally {
    for (const s of servers.splice(0)) await s.close();
    control.disconnect();
    await redis.stop();
    own.remove();
    gone.remove();
  }
});

test("out of memory: RESOURCE_EXHAUSTED, nothing half-written; the retry once memory is freed records one offer", async () => {
  const { server, clients } = await serve();
  const sessionId = uniqueId("oom");
  await putSession(clients, { sessionId });
  const before = await keysOf(server.redis, sessionId);
  await admin.config("SET", "maxmemory", "1");
  let err: Awaited<ReturnType<typeof connectErrorOf>>;
  try {
    err = await connectErrorOf(offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-m" }));
  } finally {
    await admin.config("SET", "maxmemory", "0");
  }
  expect(err.code).toBe(Code.ResourceExhausted);
  expect(err.rawMessage).toBe("the suggestion store is out of memory");
  expect(await keysOf(server.redis, sessionId)).toEqual(before);
  expect(await offeredRecords(server.redis, sessionId)).toHaveLength(0);
  const metrics = await server.telemetry.registry.getSingleMetricAsString(
    "suggest_store_refusals_total",
  );
  expect(metrics).toMatch(/suggest_store_refusals_total\{kind="out-of-memory"\} [1-9]/);
  await offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-m" });
  await offer(clients, { sessionId, turnId: "t-1", toolCallId: "call-m" });
  expect(await offeredRecords(server.redis, sessionId)).toHaveLength(1);
});
