import { afterAll, beforeAll, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import { startLockKey, startResultChannel } from "../../server/store/keys.js";
import { PubSub } from "../../server/store/pubsub.js";
import { type LockTurn, StartLocks } from "../../server/store/start-locks.js";
import { channelSubscribers, eventually, redisClient, uniqueId } from "../support/harness.js";

// Two StartLocks on two clients: two service instances sharing one Redis.
let redisA: RedisClient;
let redisB: RedisClient;
let probe: RedisClient;
const opened: PubSub[] = [];
beforeAll(() => {
  redisA = redisClient();
  redisB = redisClient();
  probe = redisClient();
});
afterAll(async () => {
  await Promise.all(opened.map((p) => p.close()));
  for (const r of [redisA, redisB, probe]) r.disconnect();
});

function locks(redis: RedisClient, ttlMs: number, maxHoldMs: number): StartLocks {
  const pubsub = new PubSub(() => subscriberConnection(redis));
  opened.push(pubsub);
  return new StartLocks(redis, pubsub, { ttlMs, maxHoldMs });
}

const soon = (ms = 30_000) => Date.now() + ms;

function held(turn: LockTurn) {
  if (turn.kind !== "held") throw new Error(`expected the lock, got ${turn.kind}`);
  return turn.lock;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a waiter hears the holder's result as soon as it releases, long before the lock would lapse", async () => {
  const [a, b] = [locks(redisA, 20_000, 60_000), locks(redisB, 20_000, 60_000)];
  const sessionId = uniqueId();
  const lock = held(await a.take(sessionId, "g1", { until: soon() }));
  const started = Date.now();
  const waiting = b.take(sessionId, "g1", { until: soon() });
  // Another suggestion's result on the same session's channel does not wake it.
  const other = held(await a.take(sessionId, "g2", { until: soon() }));
  // The waiter listens (its instance's first channel: on a cluster, its subscriber
  // connects first), then the other result is told, then its own.
  await eventually(
    async () => (await channelSubscribers(probe, startResultChannel(sessionId))) > 0,
  );
  await other.release("delivered");
  await sleep(100);
  expect(await lock.release("delivered")).toBe(true);
  expect(await waiting).toEqual({ kind: "delivered" });
  expect(Date.now() - started).toBeLessThan(2_000);
  expect(await probe.exists(startLockKey(sessionId, "g1"))).toBe(0);
});

test("a released result tells the waiter to try again, and it then takes the lock", async () => {
  const [a, b] = [locks(redisA, 20_000, 60_000), locks(redisB, 20_000, 60_000)];
  const sessionId = uniqueId();
  const lock = held(await a.take(sessionId, "g", { until: soon() }));
  const waiting = b.take(sessionId, "g", { until: soon() });
  await eventually(
    async () => (await channelSubscribers(probe, startResultChannel(sessionId))) > 0,
  );
  await lock.release("released");
  expect(await waiting).toEqual({ kind: "released" });
  const next = held(await b.take(sessionId, "g", { until: soon() }));
  await next.release("delivered");
});

test("the holder renews the lock while it holds it, past its lifetime", async () => {
  // A lifetime of 600 ms renewed every 200 ms, watched for three lifetimes: a renewal
  // late by up to 400 ms (a loaded machine running the whole suite) still keeps it.
  const a = locks(redisA, 600, 60_000);
  const sessionId = uniqueId();
  const key = startLockKey(sessionId, "g");
  const lock = held(await a.take(sessionId, "g", { until: soon() }));
  const token = await probe.get(key);
  await sleep(1_800);
  expect(await probe.get(key)).toBe(token);
  expect(await probe.pttl(key)).toBeGreaterThan(0);
  expect(lock.lost).toBe(false);
  expect(await lock.release("delivered")).toBe(true);
  expect(await probe.exists(key)).toBe(0);
});

test("a holder stuck past maxHold lets the lock lapse; a waiter wakes then, without polling, and takes it", async () => {
  const a = locks(redisA, 200, 200);
  const b = locks(redisB, 200, 200);
  const sessionId = uniqueId();
  const stuck = held(await a.take(sessionId, "g", { until: soon() }));
  const started = Date.now();
  // The holder never releases. Renewed until maxHold (200 ms), the lock lives about
  // 330 ms; the waiter wakes only when it could have expired (about every lifetime),
  // so a handful of tries, not a busy loop.
  let tries = 0;
  let turn: LockTurn;
  do {
    tries++;
    turn = await b.take(sessionId, "g", { until: soon() });
  } while (turn.kind === "lapsed" && tries < 10);
  const next = held(turn);
  const waited = Date.now() - started;
  expect(waited).toBeGreaterThanOrEqual(250);
  expect(waited).toBeLessThan(2_000);
  expect(tries).toBeLessThanOrEqual(4);
  // The stuck holder's release neither deletes the new holder's lock nor claims it.
  expect(await stuck.release("released")).toBe(false);
  expect(await probe.exists(startLockKey(sessionId, "g"))).toBe(1);
  expect(await next.release("delivered")).toBe(true);
});

test("a holder whose lock was taken over notices at its next renewal", async () => {
  const a = locks(redisA, 150, 60_000);
  const sessionId = uniqueId();
  const key = startLockKey(sessionId, "g");
  const lock = held(await a.take(sessionId, "g", { until: soon() }));
  await probe.set(key, "someone-else", "PX", 10_000);
  await sleep(200);
  expect(lock.lost).toBe(true);
  expect(await probe.get(key)).toBe("someone-else");
  expect(await lock.release("released")).toBe(false);
  expect(await probe.get(key)).toBe("someone-else");
});

test("waiting ends at `until` and when the caller's signal aborts", async () => {
  const a = locks(redisA, 20_000, 60_000);
  const b = locks(redisB, 20_000, 60_000);
  const sessionId = uniqueId();
  const lock = held(await a.take(sessionId, "g", { until: soon() }));
  const started = Date.now();
  expect(await b.take(sessionId, "g", { until: Date.now() + 200 })).toEqual({ kind: "lapsed" });
  expect(Date.now() - started).toBeLessThan(2_000);
  const abort = new AbortController();
  const waiting = b.take(sessionId, "g", { until: soon(), signal: abort.signal });
  setTimeout(() => abort.abort(new Error("the caller left")), 100);
  await expect(waiting).rejects.toThrow("the caller left");
  await lock.release("delivered");
});
