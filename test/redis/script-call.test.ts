import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { connectRedis } from "../../server/redis/redis-client.js";
import { callScript, flatScript } from "../../server/redis/script-call.js";
import { eventually, ownRedis, uniqueId } from "../support/harness.js";

// A Redis of this file's own: the tests count its EVALs and flush its scripts.
let server: Awaited<ReturnType<typeof ownRedis>>;
let admin: Redis;
beforeAll(async () => {
  server = await ownRedis();
  admin = connectRedis(server.url) as Redis;
});
afterAll(async () => {
  admin.disconnect();
  await server.stop();
  server.remove();
});

const clients: Redis[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.disconnect();
});

/** Its key, then its arguments: the first two as strings, the third's bytes. */
const ECHO = {
  lua: "return {KEYS[1], ARGV[1], ARGV[2], {string.byte(ARGV[3], 1, -1)}}",
  numberOfKeys: 1,
};

type EchoReply = [string, string, string, number[]];
type EchoClient = Redis & { echoArgs(...args: unknown[]): Promise<EchoReply> };
const ECHO_SCRIPT = flatScript("echoArgs", ECHO);

/** The echo script called on `redis` as the service calls its own. */
const echoArgs = (redis: Redis, ...args: (string | number | Buffer)[]) =>
  callScript(redis, ECHO_SCRIPT, args) as Promise<EchoReply>;

/** A client of this file's Redis with the echo script defined (for its pipelines). */
async function client(): Promise<EchoClient> {
  const redis = connectRedis(server.url) as EchoClient;
  clients.push(redis);
  redis.defineCommand("echoArgs", ECHO);
  await redis.ping();
  return redis;
}

/** The calls of EVAL and EVALSHA since the last CONFIG RESETSTAT, and their NOSCRIPT errors. */
async function scriptStats(): Promise<{ eval: number; evalsha: number; noscript: number }> {
  const info = await admin.info("all");
  const calls = (name: string) =>
    Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, "m").exec(info)?.[1] ?? 0);
  const noscript = Number(/^errorstat_NOSCRIPT:count=(\d+)/m.exec(info)?.[1] ?? 0);
  return { eval: calls("eval"), evalsha: calls("evalsha"), noscript };
}

test("a script call sends its strings, numbers and bytes as they are and answers strings", async () => {
  const redis = await client();
  const key = uniqueId("k");
  const reply = await echoArgs(redis, key, "two words", 7, Buffer.from([0xff, 0x00, 0x41]));
  expect(reply).toEqual([key, "two words", "7", [0xff, 0x00, 0x41]]);
});

test("with bytes among them: text of any script, empty values and long bytes, each exactly", async () => {
  const redis = await client();
  const key = `ключ-é-${uniqueId("k")}`;
  // The first call sends the body (EVAL), the next ones its SHA, both with bytes.
  for (let i = 0; i < 2; i++) {
    expect(await echoArgs(redis, key, "", "naïve ☃ 🎉", Buffer.alloc(0))).toEqual([
      key,
      "",
      "naïve ☃ 🎉",
      [],
    ]);
  }
  expect(await echoArgs(redis, key, Buffer.from("é"), 12, Buffer.from([0x0d, 0x0a]))).toEqual([
    key,
    "é",
    "12",
    [0x0d, 0x0a],
  ]);
  // Bytes beyond the buffer pool (4 KB), and a key after text of many bytes.
  const long = Buffer.alloc(70_000, 0x61);
  const [k, first, second, third] = await echoArgs(
    redis,
    key,
    long,
    "x".repeat(5_000),
    Buffer.from([7]),
  );
  expect([k, first === long.toString(), second, third]).toEqual([
    key,
    true,
    "x".repeat(5_000),
    [7],
  ]);
});

test("the first call on a connection sends the script's body, the next ones its SHA", async () => {
  const redis = await client();
  await admin.config("RESETSTAT");
  await Promise.all([1, 2, 3].map((i) => echoArgs(redis, "k", String(i), "", "")));
  await echoArgs(redis, "k", "4", "", "");
  expect(await scriptStats()).toEqual({ eval: 1, evalsha: 3, noscript: 0 });
});

test("a Redis that lost its scripts is sent the body again, and the call is answered", async () => {
  const redis = await client();
  await echoArgs(redis, "k", "before", "", "");
  await admin.script("FLUSH");
  await admin.config("RESETSTAT");
  const replies = await Promise.all(
    Array.from({ length: 20 }, (_, i) => echoArgs(redis, "k", String(i), "", "x")),
  );
  expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => ["k", String(i), "", [0x78]]));
  // All 20 EVALSHAs went out together and were refused; the first sent again carried the
  // body, the other 19 its SHA after it (as ioredis's own script command does).
  expect(await scriptStats()).toEqual({ eval: 1, evalsha: 39, noscript: 20 });
  await admin.config("RESETSTAT");
  expect(await echoArgs(redis, "k", "after", "", "")).toEqual(["k", "after", "", []]);
  expect(await scriptStats()).toEqual({ eval: 0, evalsha: 1, noscript: 0 });
});

test("out of memory, calls of a writing script all answer Redis's OOM, never NOSCRIPT; with memory back they are answered", async () => {
  const WRITE = { lua: "#!lua\nreturn redis.call('SET', KEYS[1], ARGV[1])", numberOfKeys: 1 };
  const redis = connectRedis(server.url) as Redis;
  const script = flatScript("setIt", WRITE);
  const setIt = (key: string, value: string) => callScript(redis, script, [key, value]);
  clients.push(redis);
  await redis.ping();
  const key = uniqueId("oom");
  await admin.config("SET", "maxmemory", "1");
  let refused: string[];
  try {
    // The first body refused before Redis caches it, the SHAs sent behind it too.
    const calls = Array.from({ length: 20 }, (_, i) => setIt(key, String(i)));
    refused = await Promise.all(calls.map((c) => c.then(String, (e: Error) => e.message)));
    refused.push(await setIt(key, "again").then(String, (e: Error) => e.message));
  } finally {
    await admin.config("SET", "maxmemory", "0");
  }
  for (const message of refused) expect(message).toMatch(/^OOM /);
  expect(await admin.exists(key)).toBe(0);
  expect(await setIt(key, "now")).toBe("OK");
  expect(await admin.get(key)).toBe("now");
});

test("after a reconnection the first call sends the body, without a NOSCRIPT first", async () => {
  const redis = await client();
  await echoArgs(redis, "k", "before", "", "");
  await admin.script("FLUSH");
  const id = await redis.client("ID");
  await admin.client("KILL", "ID", String(id));
  await eventually(async () => redis.status === "ready");
  await admin.config("RESETSTAT");
  expect(await echoArgs(redis, "k", "after", "", "")).toEqual(["k", "after", "", []]);
  expect(await scriptStats()).toEqual({ eval: 1, evalsha: 0, noscript: 0 });
});

test("a client with a keyPrefix keeps ioredis's own script call, which prefixes the keys", async () => {
  const redis = connectRedis(`${server.url}?keyPrefix=pfx:`) as EchoClient;
  clients.push(redis);
  redis.defineCommand("echoArgs", ECHO);
  const own = redis.echoArgs;
  expect(await echoArgs(redis, "k", "a", "", "")).toEqual(["pfx:k", "a", "", []]);
  expect(redis.echoArgs).toBe(own);
});

test("in a pipeline the script is ioredis's own call, queued there", async () => {
  const redis = await client();
  const pipeline = redis.pipeline() as unknown as {
    echoArgs(...args: unknown[]): unknown;
    exec(): Promise<[Error | null, unknown][]>;
  };
  pipeline.echoArgs("k", "a", "b", "c");
  pipeline.echoArgs("k", "d", "e", "f");
  expect(await pipeline.exec()).toEqual([
    [null, ["k", "a", "b", [0x63]]],
    [null, ["k", "d", "e", [0x66]]],
  ]);
});
