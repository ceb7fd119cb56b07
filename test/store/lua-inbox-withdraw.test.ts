import { afterAll, describe, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import { workspaceChannelParts, workspaceKeys } from "../../server/store/keys.js";
import { runScript } from "../../server/store/run-script.js";
import { eventually, redisClient, uniqueId } from "../support/harness.js";
import { luaSession } from "../support/lua-session.js";

/*
 * lua/withdraw-3.lua, lua/settlements-2.lua and lua/inboxChat-2.lua (the session's side of
 * the workspace inbox) called directly, through the commands scripts.ts defines on the
 * client, on the suite's redis-server: each status code and result of each script's
 * header, and what it wrote (or did not write) to the stream and the projection.
 * The inbox index's own scripts: test/store/lua-inbox-index.test.ts.
 */

const redis: RedisClient = redisClient();
afterAll(() => redis.quit());

const WITHDRAW = { WITHDRAWN: 0, DUPLICATE: 1, NO_OPEN_OFFER: 2, FENCED: 3 } as const;

type Entry = [string, string[]];

/** A session with withdraw-3.lua bound to its keys, as agent-settlements.ts calls it. */
function session() {
  const s = luaSession(redis);
  const withdraw = (title: string, call = "", token = "") =>
    runScript(
      redis,
      "withdraw",
      s.keys.log,
      s.keys.projection,
      s.keys.changes,
      title,
      "No longer needed.",
      call,
      token,
      // On a cluster the workspace's channel is on another node: the writer tells it.
      ...workspaceChannelParts(!redis.isCluster),
    );
  const entries = async () => (await redis.xrange(s.keys.log, "-", "+")) as Entry[];
  return { ...s, withdraw, entries };
}

describe("withdraw-3.lua", () => {
  test("0 WITHDRAWN: the newest open offer with the title is dismissed by the agent", async () => {
    const s = session();
    await s.offer({ id: "a", title: "Same" });
    await s.offer({ id: "b", title: "Same" });
    const reply = await s.withdraw("Same", "w-1");
    const [offerA, offerB, settled] = await s.entries();
    expect(reply).toEqual([WITHDRAW.WITHDRAWN, offerB, settled]);
    expect(settled?.[1].slice(0, 12)).toEqual([
      "type",
      "settled",
      "id",
      "b",
      "outcome",
      "dismissed",
      "by",
      "agent",
      "reason",
      "No longer needed.",
      "call",
      "w-1",
    ]);
    expect(settled?.[1][12]).toBe("time");
    expect(await redis.hmget(s.keys.projection, "s:a", "s:b")).toEqual(["open", "dismissed"]);
    expect((await s.withdraw("Same"))[1]).toEqual(offerA);
  });

  // Told by the script on a standalone Redis only (keys.ts `workspaceChannelParts`).
  test.runIf(!redis.isCluster)(
    "0 WITHDRAWN in a workspace: the entry id is told on the workspace's channel",
    async () => {
      const s = session();
      const ws = uniqueId("ws");
      await s.offer({ id: "a", title: "Told", workspace: ws });
      const sub = subscriberConnection(redis);
      const told: string[] = [];
      sub.on("smessage", (_channel: string, message: string) => told.push(message));
      try {
        await sub.ssubscribe(workspaceKeys(ws).changes);
        expect((await s.withdraw("Told", "", "1"))[0]).toBe(WITHDRAW.WITHDRAWN);
        const [offered, withdrawn] = (await s.entries()).map((e) => e[0]);
        await eventually(async () => told.includes(withdrawn as string));
        // The offer's own message was sent before the subscription. Nothing else is told.
        expect(told.filter((id) => id !== offered)).toEqual([withdrawn]);
      } finally {
        await sub.quit();
      }
    },
  );

  test("1 DUPLICATE: the same tool call answers its first offer and settlement; nothing recorded", async () => {
    const s = session();
    await s.offer({ id: "a", title: "One" });
    await s.offer({ id: "b", title: "One" });
    const first = await s.withdraw("One", "w-1");
    expect(first[0]).toBe(WITHDRAW.WITHDRAWN);
    expect(await s.withdraw("One", "w-1")).toEqual([WITHDRAW.DUPLICATE, first[1], first[2]]);
    expect(await s.withdraw("Another title", "w-1")).toEqual([
      WITHDRAW.DUPLICATE,
      first[1],
      first[2],
    ]);
    expect(await s.length()).toBe(3);
    expect(await redis.hget(s.keys.projection, "s:a")).toBe("open");
  });

  test("2 NO_OPEN_OFFER: no open offer has exactly that title; nothing recorded", async () => {
    const s = session();
    expect(await s.withdraw("Anything")).toEqual([WITHDRAW.NO_OPEN_OFFER]);
    await s.offer({ id: "a", title: "Drafted" });
    await s.offer({ id: "b", title: "Open" });
    await s.settle("a", "drafted");
    expect(await s.withdraw("Drafted")).toEqual([WITHDRAW.NO_OPEN_OFFER]);
    expect(await s.withdraw("open")).toEqual([WITHDRAW.NO_OPEN_OFFER]);
    expect(await s.withdraw("Open ")).toEqual([WITHDRAW.NO_OPEN_OFFER]);
    expect(await s.length()).toBe(3);
  });

  test("3 FENCED: a workspace's offer, the token missing or at the fence; nothing recorded", async () => {
    const s = session();
    const ws = uniqueId("ws");
    await s.offer({ id: "a", title: "In a workspace", workspace: ws, token: "1" });
    expect(await s.withdraw("In a workspace")).toEqual([WITHDRAW.FENCED, 0, ws]);
    await runScript(redis, "inboxChat", s.keys.log, s.keys.projection, ws, "5");
    expect(await s.withdraw("In a workspace", "w-1", "5")).toEqual([WITHDRAW.FENCED, 5, ws]);
    expect(await s.length()).toBe(1);
    expect((await s.withdraw("In a workspace", "w-1", "6"))[0]).toBe(WITHDRAW.WITHDRAWN);
    expect(await s.length()).toBe(2);
  });
});

describe("settlements-2.lua", () => {
  test("an empty log: no offers, no settlements", async () => {
    const s = session();
    expect(await runScript(redis, "settlements", s.keys.log, s.keys.projection, "")).toEqual([
      [],
      [],
    ]);
  });

  test("every settlement in log order, each with the index of its offer, each offer once", async () => {
    const s = session();
    await s.offer({ id: "a" });
    await s.offer({ id: "b" });
    await s.settle("a", "dismissed");
    await s.settle("b", "drafted");
    await s.settle("a", "restored");
    const [offerA, offerB, dismissA, draftB, restoreA] = await s.entries();
    expect(await runScript(redis, "settlements", s.keys.log, s.keys.projection, "")).toEqual([
      [offerA, offerB],
      [
        [dismissA, 1],
        [draftB, 2],
        [restoreA, 1],
      ],
    ]);
  });

  test("after a cursor: only the settlements after it, their offers in first-named order", async () => {
    const s = session();
    await s.offer({ id: "a" });
    await s.offer({ id: "b" });
    await s.settle("a", "dismissed");
    await s.settle("b", "drafted");
    await s.withdraw("Title a");
    const [offerA, offerB, dismissA, draftB] = await s.entries();
    await s.settle("a", "restored");
    const restoreA = (await s.entries())[4];
    expect(
      await runScript(redis, "settlements", s.keys.log, s.keys.projection, dismissA?.[0] ?? ""),
    ).toEqual([
      [offerB, offerA],
      [
        [draftB, 1],
        [restoreA, 2],
      ],
    ]);
    const last = restoreA?.[0] ?? "";
    expect(await runScript(redis, "settlements", s.keys.log, s.keys.projection, last)).toEqual([
      [],
      [],
    ]);
  });

  test("a settled record the fold did not accept is left out", async () => {
    const s = session();
    await s.offer({ id: "a" });
    await s.settle("a", "drafted");
    await redis.xadd(s.keys.log, "*", "type", "settled", "id", "a", "outcome", "dismissed");
    await redis.xadd(s.keys.log, "*", "type", "settled", "id", "ghost", "outcome", "drafted");
    const [offerA, draftA] = await s.entries();
    expect(await runScript(redis, "settlements", s.keys.log, s.keys.projection, "")).toEqual([
      [offerA],
      [[draftA, 1]],
    ]);
  });
});

describe("inboxChat-2.lua", () => {
  test("an empty log: { 0 }, and the fence is not taken", async () => {
    const s = session();
    const ws = uniqueId("ws");
    expect(await runScript(redis, "inboxChat", s.keys.log, s.keys.projection, ws, "9")).toEqual([
      0,
    ]);
    expect(await redis.hget(s.keys.projection, `f:${ws}`)).toBeNull();
  });

  test("{ 1, position, offer, ... }: the chat's open offers of the workspace, or of every one", async () => {
    const s = session();
    const [ws, other] = [uniqueId("ws"), uniqueId("ws")];
    await s.offer({ id: "a", workspace: ws });
    await s.offer({ id: "b", workspace: other });
    await s.offer({ id: "c", workspace: ws });
    await s.settle("c", "dismissed");
    await s.offer({ id: "d" });
    const [a, b, , , d] = await s.entries();
    expect(await runScript(redis, "inboxChat", s.keys.log, s.keys.projection, ws, "")).toEqual([
      1,
      1,
      a,
    ]);
    expect(await runScript(redis, "inboxChat", s.keys.log, s.keys.projection, other, "")).toEqual([
      1,
      2,
      b,
    ]);
    expect(await runScript(redis, "inboxChat", s.keys.log, s.keys.projection, "*", "")).toEqual([
      1,
      1,
      a,
      2,
      b,
      4,
      d,
    ]);
  });

  test("the fence is taken for the workspace, and never lowered", async () => {
    const s = session();
    const ws = uniqueId("ws");
    await s.offer({ id: "a", workspace: ws });
    const fence = (value: string) =>
      runScript(redis, "inboxChat", s.keys.log, s.keys.projection, ws, value);
    expect((await fence("7"))[0]).toBe(1);
    expect(await redis.hget(s.keys.projection, `f:${ws}`)).toBe("7");
    await fence("3");
    expect(await redis.hget(s.keys.projection, `f:${ws}`)).toBe("7");
    await runScript(redis, "inboxChat", s.keys.log, s.keys.projection, "*", "20");
    expect(await redis.hget(s.keys.projection, "f:*")).toBeNull();
    expect(await s.offer({ id: "b", workspace: ws, token: "7" })).toEqual([6, 7]);
    expect((await s.offer({ id: "b", workspace: ws, token: "8" }))[0]).toBe(0);
  });
});
