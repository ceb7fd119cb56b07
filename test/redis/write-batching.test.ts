import type { Socket } from "node:net";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { EmbeddedChatHost } from "../../server/host/embedded-host.js";
import { connectRedis } from "../../server/redis/redis-client.js";
import { callScript, flatScript } from "../../server/redis/script-call.js";
import { COMMANDS_PER_WRITE } from "../../server/redis/turn-waits.js";
import { Readiness } from "../../server/rpc/readiness.js";
import { hostKeys } from "../../server/store/keys.js";
import { eventually, ownRedis, uniqueId } from "../support/harness.js";
import { countWrites } from "../support/socket-writes.js";

// A Redis of this file's own: one test keeps it busy for a moment.
let server: Awaited<ReturnType<typeof ownRedis>>;
beforeAll(async () => {
  server = await ownRedis();
});
afterAll(async () => {
  await server.stop();
  server.remove();
});

const clients: Redis[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.disconnect();
});

/** Pushes `ARGV[1]` on the list `KEYS[1]`: a script called as the service calls its own. */
const PUSH = flatScript("pushIt", {
  lua: "return redis.call('RPUSH', KEYS[1], ARGV[1])",
  numberOfKeys: 1,
});
const push = (redis: Redis, key: string, value: string) =>
  callScript(redis, PUSH, [key, value]) as Promise<number>;

/** Answers PONG, writing nothing. */
const PONG = flatScript("pong", { lua: "#!lua flags=no-writes\nreturn 'PONG'", numberOfKeys: 0 });
const pong = (redis: Redis) => callScript(redis, PONG, []) as Promise<string>;

/** A client of this file's Redis as the service makes it, ready. */
async function client(): Promise<Redis> {
  const redis = connectRedis(server.url) as Redis;
  clients.push(redis);
  await redis.ping();
  return redis;
}

test("the script calls of one turn leave in one write, in order, each answered", async () => {
  const redis = await client();
  const key = uniqueId("batch");
  const counter = countWrites(redis.stream as Socket);
  const replies = await Promise.all(
    Array.from({ length: COMMANDS_PER_WRITE }, (_, i) => push(redis, key, String(i))),
  );
  expect(counter.writes).toBe(1);
  expect(replies).toEqual(Array.from({ length: COMMANDS_PER_WRITE }, (_, i) => i + 1));
  await redis.del(key);
});

test("the embedded host's session reads join the turn's script calls in one write", async () => {
  const redis = await client();
  const host = new EmbeddedChatHost(redis);
  const sessionId = uniqueId("sess");
  await host.putSession({ sessionId, workspaceId: "" });
  const key = uniqueId("batch");
  const counter = countWrites(redis.stream as Socket);
  const [sessions, pushed] = await Promise.all([
    Promise.all(Array.from({ length: 4 }, () => host.findSession(sessionId))),
    Promise.all(Array.from({ length: 4 }, (_, i) => push(redis, key, String(i)))),
  ]);
  expect(counter.writes).toBe(1);
  expect(sessions.map((s) => s?.sessionId)).toEqual([sessionId, sessionId, sessionId, sessionId]);
  expect(pushed).toEqual([1, 2, 3, 4]);
  await redis.del(key, hostKeys(sessionId).session);
});

test("the readiness check's PING (grpc.health.v1, /readyz) joins the turn's script calls in one write", async () => {
  const redis = await client();
  const readiness = new Readiness(redis);
  const key = uniqueId("batch");
  const counter = countWrites(redis.stream as Socket);
  const [ready, pushed] = await Promise.all([
    readiness.check(),
    Promise.all([push(redis, key, "a"), push(redis, key, "b")]),
  ]);
  expect(counter.writes).toBe(1);
  expect(ready).toBeUndefined();
  expect(pushed).toEqual([1, 2]);
  await redis.del(key);
});

test("a turn of many script calls writes them eight to a write, so Redis starts before the turn ends", async () => {
  const redis = await client();
  const key = uniqueId("batch");
  const counter = countWrites(redis.stream as Socket);
  const atEachWrite: number[] = [];
  const replies = await Promise.all(
    Array.from({ length: 50 }, (_, i) => {
      const reply = push(redis, key, String(i));
      atEachWrite.push(counter.writes);
      return reply;
    }),
  );
  expect(COMMANDS_PER_WRITE).toBe(8);
  // The first 8 are written as the 9th is asked for, within the turn; the last 2 at its end.
  expect(atEachWrite.slice(0, 9)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1]);
  expect(counter.writes).toBe(7);
  expect(replies).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  expect(await redis.lrange(key, 0, -1)).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
  await redis.del(key);
});

test("a turn's script calls after a reconnection leave in one write too", async () => {
  const redis = await client();
  const first = redis.stream;
  const id = await redis.client("ID");
  const killer = await client();
  await killer.client("KILL", "ID", String(id));
  await eventually(async () => redis.status === "ready" && redis.stream !== first);
  const counter = countWrites(redis.stream as Socket);
  const replies = await Promise.all(Array.from({ length: 8 }, () => pong(redis)));
  expect(replies).toEqual(Array.from({ length: 8 }, () => "PONG"));
  expect(counter.writes).toBe(1);
});

/**
 * A script that keeps Redis busy for about a second, by the clock that moves inside a
 * script: `os.clock()` (CPU time) where the server has it (Valkey 8, whose TIME stands
 * still while a script runs), else TIME (Redis 7.0, which has no `os` in scripts).
 */
const BUSY = flatScript("busy", {
  numberOfKeys: 0,
  lua: `#!lua flags=no-writes
local ok, clock = pcall(function() return os.clock end)
local now = ok and clock or function() local t = redis.call('TIME') return t[1] + t[2] / 1000000 end
local start = now()
repeat until now() - start >= 1
return 1`,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("a turn's script calls go out while an earlier turn's are still unanswered", async () => {
  const redis = await client();
  const counter = countWrites(redis.stream as Socket);
  let slowDone = false;
  const slow = callScript(redis, BUSY, []).then((v) => {
    slowDone = true;
    return v;
  });
  await sleep(50);
  const fast = pong(redis);
  await sleep(50);
  // ioredis's auto-pipelining would hold the second call back until the first's answer.
  expect(slowDone).toBe(false);
  expect(counter.writes).toBe(2);
  expect(await slow).toBe(1);
  expect(await fast).toBe("PONG");
});
