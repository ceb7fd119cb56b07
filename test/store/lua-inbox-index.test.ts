import { afterAll, describe, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { workspaceKeys } from "../../server/store/keys.js";
import { runScript } from "../../server/store/run-script.js";
import { redisClient, uniqueId } from "../support/harness.js";

/*
 * The workspace inbox index's scripts (lua/announce-2.lua, lua/inboxPage-4.lua,
 * lua/inboxPut-4.lua) called directly, through the commands scripts.ts defines on the
 * client, on the suite's redis-server: each result of each script's header, and what it
 * left in the workspace's keys. The session's side: test/store/lua-inbox-withdraw.test.ts.
 */

const redis: RedisClient = redisClient();
afterAll(() => redis.quit());

/** A workspace of its own: its keys and the three scripts bound to them. */
function workspace() {
  const keys = workspaceKeys(uniqueId("ws"));
  const index = [keys.offers, keys.chats, keys.pending, keys.docs] as const;
  const announce = async (session: string, minimum = "0") =>
    Number(await runScript(redis, "announce", keys.chats, keys.pending, session, minimum));
  const page = (after: string, limit: number) =>
    runScript(redis, "inboxPage", ...index, after, String(limit));
  const put = (session: string, token: string, clear: boolean, ...members: string[]) =>
    runScript(redis, "inboxPut", ...index, session, token, clear ? "1" : "0", ...members);
  return { keys, index, announce, page, put };
}

/** The Redis server's clock in microseconds, as announce-2.lua reads it. */
async function serverMicros(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1_000_000 + Number(micros);
}

describe("announce-2.lua", () => {
  test("the token: above the last one, at least the server's time; the chat marked pending", async () => {
    const w = workspace();
    const before = await serverMicros();
    const first = await w.announce("chat-1");
    expect(first).toBeGreaterThanOrEqual(before);
    const second = await w.announce("chat-2");
    const third = await w.announce("chat-1");
    expect(second).toBeGreaterThan(first);
    expect(third).toBeGreaterThan(second);
    expect(await redis.hgetall(w.keys.chats)).toEqual({
      seq: String(third),
      "t:chat-1": String(third),
      "t:chat-2": String(second),
    });
    expect((await redis.smembers(w.keys.pending)).sort()).toEqual(["chat-1", "chat-2"]);
  });

  test("ARGV[2] minimum: a token at least that, and later ones above it", async () => {
    const w = workspace();
    const minimum = (await serverMicros()) * 2;
    expect(await w.announce("chat-1", String(minimum))).toBe(minimum);
    expect(await w.announce("chat-2")).toBe(minimum + 1);
    expect(await redis.hget(w.keys.chats, "seq")).toBe(String(minimum + 1));
  });
});

describe("inboxPage-4.lua", () => {
  test("an empty index: { {}, {}, {}, '0:0' }", async () => {
    const w = workspace();
    expect(await w.page("", 10)).toEqual([[], [], [], "0:0"]);
  });

  test("{ version } alone: the index unchanged since the version held, and no chat pending", async () => {
    const w = workspace();
    const held = (version: string) =>
      runScript(redis, "inboxPage", ...w.index, "", "10", version) as Promise<unknown[]>;
    const token = String(await w.announce("chat-1"));
    // Pending: the whole page, whatever version is held.
    const pendingPage = await w.page("", 10);
    expect(await held(String(pendingPage[3]))).toHaveLength(4);
    await w.put("chat-1", token, true, "m1", "doc 1");
    const page = await w.page("", 10);
    const version = String(page[3]);
    expect(version).toBe(`${token}:1`);
    expect(await held(version)).toEqual([version]);
    expect(await held("an older one")).toEqual(page);
    // Every announcement and every write moves the version.
    const again = String(await w.announce("chat-1"));
    await w.put("chat-1", again, true, "m1", "doc 1");
    expect(await held(version)).toEqual([[], ["m1"], ["doc 1"], `${again}:2`]);
  });

  test("{ pending, members, docs }: a window newest first, after a member, with every pending chat", async () => {
    const w = workspace();
    const token = String(await w.announce("chat-1"));
    await w.put("chat-1", token, true, "m1", "doc 1", "m2", "doc 2", "m3", "doc 3");
    const pendingToken = String(await w.announce("chat-2"));
    await redis.sadd(w.keys.pending, "chat-never-announced");
    const [pending, members, docs, version] = (await w.page("", 2)) as [
      string[],
      string[],
      string[],
      string,
    ];
    expect(version).toBe(`${pendingToken}:1`);
    const pairs = new Map<string, string>();
    for (let i = 0; i < pending.length; i += 2) pairs.set(pending[i] ?? "", pending[i + 1] ?? "");
    expect(pairs).toEqual(
      new Map([
        ["chat-2", pendingToken],
        ["chat-never-announced", "0"],
      ]),
    );
    expect(members).toEqual(["m3", "m2"]);
    expect(docs).toEqual(["doc 3", "doc 2"]);
    expect((await w.page("m2", 2)).slice(1, 3)).toEqual([["m1"], ["doc 1"]]);
    expect((await w.page("m1", 2)).slice(1, 3)).toEqual([[], []]);
  });

  test("a member without its doc answers false (nil) in its place", async () => {
    const w = workspace();
    await redis.zadd(w.keys.offers, 0, "m1", 0, "m2");
    await redis.hset(w.keys.docs, "m1", "doc 1");
    expect(await w.page("", 10)).toEqual([[], ["m2", "m1"], [null, "doc 1"], "0:0"]);
  });
});

describe("inboxPut-4.lua", () => {
  test("1: with the chat's token, its members become exactly the given ones", async () => {
    const w = workspace();
    const token = String(await w.announce("chat-1"));
    expect(await w.put("chat-1", token, false, "m1", "doc 1", "m2", "doc 2")).toBe(1);
    expect(await redis.smembers(w.keys.pending)).toEqual(["chat-1"]);
    expect(await w.put("chat-1", token, true, "m3", "doc 3")).toBe(1);
    expect(await redis.zrange(w.keys.offers, 0, -1)).toEqual(["m3"]);
    expect(await redis.hgetall(w.keys.docs)).toEqual({ m3: "doc 3" });
    expect(await redis.hget(w.keys.chats, "m:chat-1")).toBe("m3");
    expect(await redis.smembers(w.keys.pending)).toEqual([]);
  });

  test("0: an announcement came since the token was taken; nothing written, still pending", async () => {
    const w = workspace();
    const token = String(await w.announce("chat-1"));
    await w.put("chat-1", token, true, "m1", "doc 1");
    await w.announce("chat-1");
    expect(await w.put("chat-1", token, true, "m2", "doc 2")).toBe(0);
    expect(await redis.zrange(w.keys.offers, 0, -1)).toEqual(["m1"]);
    expect(await redis.hgetall(w.keys.docs)).toEqual({ m1: "doc 1" });
    expect(await redis.smembers(w.keys.pending)).toEqual(["chat-1"]);
    expect(await w.put("chat-never-announced", "0", true, "m9", "doc 9")).toBe(0);
    expect(await redis.zcard(w.keys.offers)).toBe(1);
  });

  test("a chat left with no member and not pending leaves the index; a pending one keeps its token", async () => {
    const w = workspace();
    const token1 = String(await w.announce("chat-1"));
    const token2 = String(await w.announce("chat-2"));
    await w.put("chat-1", token1, true, "m1", "doc 1");
    await w.put("chat-2", token2, true, "m2", "doc 2");
    const again = String(await w.announce("chat-2"));
    expect(await w.put("chat-1", token1, true)).toBe(1);
    expect(await w.put("chat-2", again, false)).toBe(1);
    expect(await redis.zrange(w.keys.offers, 0, -1)).toEqual([]);
    expect(await redis.hgetall(w.keys.chats)).toEqual({ seq: again, puts: "4", "t:chat-2": again });
    expect(await redis.smembers(w.keys.pending)).toEqual(["chat-2"]);
  });
});
