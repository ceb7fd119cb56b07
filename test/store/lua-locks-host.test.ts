import { afterAll, describe, expect, test } from "vitest";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import { hostKeys, startLockKey, startResultChannel } from "../../server/store/keys.js";
import { runScript } from "../../server/store/run-script.js";
import { eventually, redisClient, uniqueId } from "../support/harness.js";

/*
 * The start lock's scripts (lua/extendLock-1.lua, lua/releaseLock-2.lua) and the embedded
 * host's (lua/createChat-2.lua, lua/postMessage-3.lua) called directly, through the
 * commands scripts.ts defines on the client, on the suite's redis-server: every result
 * of each script's header, and what it left in Redis.
 */

const redis = redisClient();
afterAll(() => redis.quit());

/** A start lock held by `token` for `ttlMs`. */
async function heldLock(token: string, ttlMs = 10_000) {
  const sessionId = uniqueId("lua-lock");
  const lock = startLockKey(sessionId, "sg-1");
  await redis.set(lock, token, "PX", ttlMs);
  return { sessionId, lock, channel: startResultChannel(sessionId) };
}

describe("extendLock-1.lua", () => {
  test("1: the holder's token extends the lock to the new lifetime", async () => {
    const { lock } = await heldLock("me", 1_000);
    expect(await runScript(redis, "extendLock", lock, "me", "60000")).toBe(1);
    expect(await redis.pttl(lock)).toBeGreaterThan(1_000);
  });

  test("0: another token, or no lock, extends nothing", async () => {
    const { lock, sessionId } = await heldLock("holder", 1_000);
    expect(await runScript(redis, "extendLock", lock, "someone-else", "60000")).toBe(0);
    expect(await redis.pttl(lock)).toBeLessThanOrEqual(1_000);
    expect(await redis.get(lock)).toBe("holder");
    const gone = startLockKey(sessionId, "never-taken");
    expect(await runScript(redis, "extendLock", gone, "holder", "60000")).toBe(0);
    expect(await redis.exists(gone)).toBe(0);
  });
});

describe("releaseLock-2.lua", () => {
  /** Subscribes to `channel`; answers the messages received and a close function. */
  async function listen(channel: string) {
    const sub = subscriberConnection(redis);
    const messages: string[] = [];
    sub.on("smessage", (_channel: string, message: string) => messages.push(message));
    await sub.ssubscribe(channel);
    return { messages, close: () => sub.quit() };
  }

  test("1: the holder releases the lock, and the message is published", async () => {
    const { lock, channel } = await heldLock("me");
    const l = await listen(channel);
    try {
      expect(await runScript(redis, "releaseLock", lock, channel, "me", "sg-1 delivered")).toBe(1);
      expect(await redis.exists(lock)).toBe(0);
      await eventually(async () => l.messages.length > 0);
      expect(l.messages).toEqual(["sg-1 delivered"]);
    } finally {
      await l.close();
    }
  });

  test("0: another token leaves the lock alone, and the message is published all the same", async () => {
    const { lock, channel } = await heldLock("holder");
    const l = await listen(channel);
    try {
      expect(await runScript(redis, "releaseLock", lock, channel, "stale", "sg-1 released")).toBe(
        0,
      );
      expect(await redis.get(lock)).toBe("holder");
      await eventually(async () => l.messages.length > 0);
      expect(l.messages).toEqual(["sg-1 released"]);
    } finally {
      await l.close();
    }
  });
});

describe("createChat-2.lua", () => {
  test("1 created, then 0: the chat existed and nothing was written", async () => {
    const keys = hostKeys(uniqueId("lua-chat"));
    const chat = Buffer.from([0x0a, 0x01, 0xff]);
    const session = Buffer.from([0x12, 0x00]);
    expect(await runScript(redis, "createChat", keys.chat, keys.session, chat, session)).toBe(1);
    const other = Buffer.from("other");
    expect(await runScript(redis, "createChat", keys.chat, keys.session, other, other)).toBe(0);
    expect(await redis.getBuffer(keys.chat)).toEqual(chat);
    expect(await redis.getBuffer(keys.session)).toEqual(session);
  });
});

describe("postMessage-3.lua", () => {
  test("2: no such chat; nothing written", async () => {
    const keys = hostKeys(uniqueId("lua-post"));
    const post = await runScript(
      redis,
      "postMessage",
      keys.session,
      keys.messageIds,
      keys.messages,
      "m-1",
      Buffer.from("brief"),
    );
    expect(post).toBe(2);
    expect(await redis.exists(keys.messageIds, keys.messages)).toBe(0);
  });

  test("0 posted, 1 already posted with that id, 0 for another id", async () => {
    const keys = hostKeys(uniqueId("lua-post"));
    await redis.set(keys.session, Buffer.from("session"));
    const post = (id: string, text: string) =>
      runScript(
        redis,
        "postMessage",
        keys.session,
        keys.messageIds,
        keys.messages,
        id,
        Buffer.from(text),
      );
    expect(await post("m-1", "first")).toBe(0);
    expect(await post("m-1", "again")).toBe(1);
    expect(await post("m-2", "second")).toBe(0);
    expect(await redis.lrange(keys.messages, 0, -1)).toEqual(["first", "second"]);
    expect((await redis.smembers(keys.messageIds)).sort()).toEqual(["m-1", "m-2"]);
  });
});
