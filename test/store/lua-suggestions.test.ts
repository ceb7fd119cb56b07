import { afterAll, describe, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { runScript } from "../../server/store/run-script.js";
import { redisClient } from "../support/harness.js";
import { luaSession, OFFER, SETTLE } from "../support/lua-session.js";

/*
 * lua/offer-3.lua, lua/settle-3.lua and lua/readLists-2.lua called directly, through the
 * commands scripts.ts defines on the client, on the suite's redis-server: each status
 * code of each script's header, and what it wrote (or did not write) to the stream.
 * The limits are ARGV, so they are given small here: the scripts must read them.
 */

const redis: RedisClient = redisClient();
afterAll(() => redis.quit());

describe("offer-3.lua", () => {
  test("0 OK: appends one offered record and answers its id, entry id and fields", async () => {
    const s = luaSession(redis);
    const reply = await s.offer({ id: "a", turn: "t1", call: "c1" });
    expect(reply.slice(0, 2)).toEqual([OFFER.OK, "a"]);
    const [[entryId, fields]] = (await redis.xrange(s.keys.log, "-", "+")) as [[string, string[]]];
    expect(reply[2]).toBe(entryId);
    expect(reply[3]).toEqual(fields);
    expect(fields.slice(0, 14)).toEqual([
      "type",
      "offered",
      "id",
      "a",
      "turn",
      "t1",
      "call",
      "c1",
      "title",
      "Title a",
      "tldr",
      "Worth doing",
      "brief",
      "Do the follow-up.",
    ]);
    expect(fields[14]).toBe("time");
    expect(await redis.hmget(s.keys.projection, "n", "open")).toEqual(["1", "1"]);
  });

  test("1 DUPLICATE: the same tool call, or the same id re-sent, answers the first record", async () => {
    const s = luaSession(redis);
    const first = await s.offer({ id: "a", call: "c1" });
    const byCall = await s.offer({ id: "b", turn: "other-turn", call: "c1" });
    expect(byCall).toEqual([OFFER.DUPLICATE, "a", first[2], first[3]]);
    const byId = await s.offer({ id: "a", turn: "third-turn" });
    expect(byId).toEqual([OFFER.DUPLICATE, "a", first[2], first[3]]);
    expect(await s.length()).toBe(1);
  });

  test("2 LIFETIME: the lifetime limit (ARGV[8]) reached, settled offers counted", async () => {
    const s = luaSession(redis);
    expect((await s.offer({ id: "a", lifetime: 2 }))[0]).toBe(OFFER.OK);
    expect((await s.settle("a", "dismissed"))[0]).toBe(SETTLE.RECORDED);
    expect((await s.offer({ id: "b", lifetime: 2 }))[0]).toBe(OFFER.OK);
    expect(await s.offer({ id: "c", lifetime: 2 })).toEqual([OFFER.LIFETIME]);
    expect(await s.length()).toBe(3);
  });

  test("3 OPEN: the open limit (ARGV[9]) reached; a settlement frees a place", async () => {
    const s = luaSession(redis);
    expect((await s.offer({ id: "a", open: 1 }))[0]).toBe(OFFER.OK);
    expect(await s.offer({ id: "b", open: 1 })).toEqual([OFFER.OPEN]);
    await s.settle("a", "drafted");
    expect((await s.offer({ id: "b", open: 1 }))[0]).toBe(OFFER.OK);
    expect(await s.length()).toBe(3);
  });

  test("4 TURN: a second offer on a turn that already offered one", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a", turn: "t", call: "c1" });
    expect(await s.offer({ id: "b", turn: "t", call: "c2" })).toEqual([OFFER.TURN]);
    expect(await s.length()).toBe(1);
  });

  test("5 CHECKED: mode 'check' answers whether the quotas allow an offer, and writes nothing", async () => {
    const s = luaSession(redis);
    expect(await s.offer({ id: "a", mode: "check" })).toEqual([OFFER.CHECKED]);
    expect(await s.length()).toBe(0);
    await s.offer({ id: "a", turn: "t" });
    expect(await s.offer({ id: "b", turn: "t", mode: "check" })).toEqual([OFFER.TURN]);
    expect(await s.offer({ id: "b", mode: "check", open: 1 })).toEqual([OFFER.OPEN]);
    expect(await s.length()).toBe(1);
  });

  test("the checks run in the contract's order: lifetime, then open, then turn", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a", turn: "t" });
    const all = { id: "b", turn: "t" };
    expect(await s.offer({ ...all, lifetime: 1, open: 1 })).toEqual([OFFER.LIFETIME]);
    expect(await s.offer({ ...all, open: 1 })).toEqual([OFFER.OPEN]);
    expect(await s.offer(all)).toEqual([OFFER.TURN]);
    expect(await s.length()).toBe(1);
  });
});

describe("settle-3.lua", () => {
  test("0 RECORDED: appends the settlement and answers the standing after it", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a" });
    await s.offer({ id: "b" });
    expect(await s.settle("a", "started", "chat-1")).toEqual([
      SETTLE.RECORDED,
      "started",
      "chat-1",
    ]);
    expect(await s.settle("b", "dismissed")).toEqual([SETTLE.RECORDED, "dismissed", ""]);
    expect(await s.settle("b", "restored")).toEqual([SETTLE.RECORDED, "open", ""]);
    const records = (await redis.xrange(s.keys.log, "-", "+")).map(([, f]) => f.slice(0, 6));
    expect(records.slice(2)).toEqual([
      ["type", "settled", "id", "a", "outcome", "started"],
      ["type", "settled", "id", "b", "outcome", "dismissed"],
      ["type", "settled", "id", "b", "outcome", "restored"],
    ]);
    const [, startedFields] = (await redis.xrange(s.keys.log, "-", "+"))[2] as [string, string[]];
    expect(startedFields.slice(6, 8)).toEqual(["chat", "chat-1"]);
  });

  test("1 ALREADY: the offer already stands as asked; nothing recorded", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a" });
    await s.offer({ id: "b" });
    expect(await s.settle("a", "restored")).toEqual([SETTLE.ALREADY, "open", ""]);
    await s.settle("a", "started", "chat-1");
    expect(await s.settle("a", "started", "chat-2")).toEqual([SETTLE.ALREADY, "started", "chat-1"]);
    await s.settle("b", "drafted");
    expect(await s.settle("b", "drafted")).toEqual([SETTLE.ALREADY, "drafted", ""]);
    expect(await s.length()).toBe(4);
  });

  test("2 NOT_FOUND: no offer with that id", async () => {
    const s = luaSession(redis);
    expect(await s.settle("ghost", "dismissed")).toEqual([SETTLE.NOT_FOUND, "", ""]);
    await s.offer({ id: "a" });
    expect(await s.settle("ghost", "restored")).toEqual([SETTLE.NOT_FOUND, "", ""]);
    expect(await s.length()).toBe(1);
  });

  test("3 NOT_OPEN: the outcome does not fit the offer's standing", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a" });
    await s.offer({ id: "b" });
    await s.settle("a", "drafted");
    expect(await s.settle("a", "dismissed")).toEqual([SETTLE.NOT_OPEN, "drafted", ""]);
    expect(await s.settle("a", "restored")).toEqual([SETTLE.NOT_OPEN, "drafted", ""]);
    await s.settle("b", "started", "chat-b");
    expect(await s.settle("b", "drafted")).toEqual([SETTLE.NOT_OPEN, "started", "chat-b"]);
    expect(await s.length()).toBe(4);
  });

  test("4 OPEN_LIMIT: a restore with the open limit (ARGV[4]) reached", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a" });
    await s.settle("a", "dismissed");
    await s.offer({ id: "b" });
    expect(await s.settle("a", "restored", "", 1)).toEqual([SETTLE.OPEN_LIMIT, "dismissed", ""]);
    expect(await s.length()).toBe(3);
    expect(await s.settle("a", "restored", "", 2)).toEqual([SETTLE.RECORDED, "open", ""]);
  });
});

describe("readLists-2.lua", () => {
  test("an empty log: version 0-0:0 and no offers", async () => {
    const s = luaSession(redis);
    expect(await runScript(redis, "readLists", s.keys.log, s.keys.projection)).toEqual(["0-0:0"]);
  });

  test("the version, then each offer's record and its standing settlement, in offer order", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a" });
    await s.offer({ id: "b" });
    await s.settle("a", "dismissed");
    const entries = await redis.xrange(s.keys.log, "-", "+");
    const [offerA, offerB, settledA] = entries as [string, string[]][];
    const version = `${settledA?.[0]}:3`;
    expect(await runScript(redis, "readLists", s.keys.log, s.keys.projection)).toEqual([
      version,
      offerA,
      settledA,
      offerB,
      [],
    ]);
    // The version the caller has, unchanged: the version alone.
    expect(await runScript(redis, "readLists", s.keys.log, s.keys.projection, version)).toEqual([
      version,
    ]);
    // Held when the log was empty: it only grew since, so the offers its entries name,
    // in the order first named (a delta).
    expect(await runScript(redis, "readLists", s.keys.log, s.keys.projection, "0-0:0")).toEqual([
      version,
      "delta",
      offerA,
      settledA,
      offerB,
      [],
    ]);
    // A version this log never had (its last entry is not there): every offer.
    expect(
      await runScript(redis, "readLists", s.keys.log, s.keys.projection, "1-1:1"),
    ).toHaveLength(5);
  });

  test("readSuggestion-2.lua: one offer's records, or the version alone when unchanged", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a" });
    await s.offer({ id: "b" });
    await s.settle("a", "dismissed");
    const [offerA, offerB, settledA] = (await redis.xrange(s.keys.log, "-", "+")) as [
      string,
      string[],
    ][];
    const version = `${settledA?.[0]}:3`;
    const read = (id: string, have = "") =>
      runScript(redis, "readSuggestion", s.keys.log, s.keys.projection, id, have);
    expect(await read("a")).toEqual([version, offerA, settledA]);
    expect(await read("b")).toEqual([version, offerB, []]);
    expect(await read("nope")).toEqual([version, [], []]);
    expect(await read("a", version)).toEqual([version]);
  });

  test("a deleted projection is rebuilt from the stream: the same answer", async () => {
    const s = luaSession(redis);
    await s.offer({ id: "a" });
    await s.settle("a", "started", "chat-1");
    const before = await runScript(redis, "readLists", s.keys.log, s.keys.projection);
    await redis.del(s.keys.projection);
    expect(await runScript(redis, "readLists", s.keys.log, s.keys.projection)).toEqual(before);
  });
});
