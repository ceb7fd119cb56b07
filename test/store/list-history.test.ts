import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { buildChat } from "../../bench/history.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestionLists } from "../../server/domain/fold.js";
import { sessionKeys } from "../../server/store/keys.js";
import { ListsCache } from "../../server/store/lists-cache.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { ownRedis } from "../support/harness.js";
import { foldLog } from "../support/model/fold.js";

/*
 * Issue 7, history independence: a chat whose stream holds 10,000 records (dismiss and
 * restore cycles) lists and offers with the same Redis work as a fresh chat holding the
 * same offers. The work is counted, not timed: MONITOR on a Redis of this test's own
 * shows every command the scripts run ("lua" as their source), so a read that scanned
 * the stream would show an XRANGE over a range instead of single entries.
 */

let redisServer: Awaited<ReturnType<typeof ownRedis>>;
let store: SuggestionStore;
/** The same store without the instance's cache: every read runs the projection's path. */
let uncached: SuggestionStore;
let admin: Redis;
const fresh = `fresh-${randomUUID()}`;
const history = `history-${randomUUID()}`;
beforeAll(async () => {
  redisServer = await ownRedis();
  store = new SuggestionStore(createRedisClient(redisServer.url));
  uncached = new SuggestionStore(store.redis, undefined, new ListsCache(0));
  admin = new Redis(redisServer.url);
  await buildChat(store, fresh);
  await buildChat(store, history, 10_000);
}, 60_000);
afterAll(async () => {
  store.redis.disconnect();
  admin.disconnect();
  await redisServer.stop();
  redisServer.remove();
});

/** The commands the scripts ran during `run`, in order, as `[name, ...args]`. */
async function scriptCommands(run: () => Promise<unknown>): Promise<string[][]> {
  const monitor = await admin.monitor();
  const commands: string[][] = [];
  const marker = `done-${randomUUID()}`;
  const markerSeen = new Promise<void>((resolve) => {
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      if (args[0]?.toLowerCase() === "echo" && args[1] === marker) resolve();
      else if (source === "lua") commands.push([(args[0] ?? "").toUpperCase(), ...args.slice(1)]);
    });
  });
  try {
    await run();
    // MONITOR shows commands in the order they ran: once the marker shows, all did.
    await admin.echo(marker);
    await markerSeen;
  } finally {
    monitor.disconnect();
  }
  return commands;
}

const names = (commands: string[][]) => commands.map((c) => c[0]);
/** What a reader sees of a suggestion, times aside (the two chats were built apart). */
const view = (lists: SuggestionLists) =>
  [...lists.open, ...lists.settled].map((s) => [s.id, SuggestionState[s.state], s.chatId, s.title]);

test("a chat of 10,000 records lists as the fold of its whole log, like a fresh chat", async () => {
  expect(await admin.xlen(sessionKeys(history).log)).toBe(10_000);
  expect(await admin.xlen(sessionKeys(fresh).log)).toBe(17);
  const lists = await store.lists(history);
  expect(lists).toEqual(foldLog(history, await store.readLog(history)));
  expect(lists.open.map((s) => s.id)).toEqual(["o9", "o8", "o7"]);
  expect(lists.settled.map((s) => [s.id, SuggestionState[s.state], s.chatId])).toEqual([
    ["o0", "DRAFTED", ""],
    ["o1", "DISMISSED", ""],
    ["o2", "STARTED", "chat-2"],
    ["o3", "DRAFTED", ""],
    ["o4", "DISMISSED", ""],
    ["o5", "STARTED", "chat-5"],
    ["o6", "DRAFTED", ""],
  ]);
  expect(view(lists)).toEqual(view(await store.lists(fresh)));

  // Rebuilt from the stream after deletion (O(records), once), the same lists again.
  await admin.del(sessionKeys(history).projection);
  expect(await uncached.lists(history)).toEqual(lists);
});

test("the list read runs the same commands on 10,000 records as on 17", async () => {
  const onFresh = await scriptCommands(() => uncached.lists(fresh));
  const onHistory = await scriptCommands(() => uncached.lists(history));
  expect(names(onHistory)).toEqual(names(onFresh));
  // Catch-up is an XREVRANGE COUNT 1; then one record read by id per offer and per
  // settlement (10 + 7), never a range of the stream.
  const ranges = onHistory.filter((c) => c[0] === "XRANGE");
  expect(ranges).toHaveLength(17);
  for (const [, , start, end] of ranges) expect(start).toBe(end);
  // The log's tip, read once for the version (readLists-2.lua) and the catch-up.
  const last = ["XREVRANGE", sessionKeys(history).log, "+", "-", "COUNT", "1"];
  expect(onHistory.filter((c) => c[0] === "XREVRANGE")).toEqual([last]);
  expect(onHistory.filter((c) => c[0] === "XLEN")).toHaveLength(1);
  expect(onHistory.length).toBeLessThanOrEqual(5 + 4 * 10);
  // Read again by an instance that holds this version: the version alone, no record.
  await store.lists(history);
  const unchanged = await scriptCommands(() => store.lists(history));
  expect(names(unchanged)).toEqual(["XREVRANGE", "XLEN"]);
});

test("a record appended by another writer is caught up alone, not with the history", async () => {
  const { log } = sessionKeys(history);
  const before = await admin.xrevrange(log, "+", "-", "COUNT", 1);
  await admin.xadd(log, "*", "type", "note", "id", "o9");
  const commands = await scriptCommands(() => uncached.lists(history));
  const caughtUp = commands.filter((c) => c[0] === "XRANGE" && c[2] !== c[3]);
  expect(caughtUp).toEqual([["XRANGE", log, `(${before[0]?.[0]}`, "+"]]);
  expect(await store.lists(history)).toEqual(foldLog(history, await store.readLog(history)));
});

test("offers run the same commands on 10,000 records as on 17, and answer alike", async () => {
  const retry = {
    id: "o-new",
    turnId: "turn-new",
    toolCallId: "call-0",
    title: "x",
    tldr: "y",
    brief: "z",
  };
  const fresh0 = (await store.lists(fresh)).byId.get("o0");
  const history0 = (await store.lists(history)).byId.get("o0");
  for (const [chat, first] of [
    [fresh, fresh0],
    [history, history0],
  ] as const) {
    // A retried tool call answers its first offer (as it was offered); a new one is
    // refused at the lifetime limit of 10.
    const duplicate = await store.offer(chat, retry, false);
    expect(duplicate).toMatchObject({ kind: "duplicate", suggestion: { id: "o0" } });
    expect(duplicate.kind === "duplicate" && duplicate.suggestion.offeredAt).toEqual(
      first?.offeredAt,
    );
    const refused = await store.offer(chat, { ...retry, toolCallId: "call-new" }, false);
    expect(refused.kind).toBe("lifetime-limit");
  }
  for (const toolCallId of ["call-0", "call-new"]) {
    const offer = { ...retry, toolCallId };
    const onFresh = await scriptCommands(() => store.offer(fresh, offer, false));
    const onHistory = await scriptCommands(() => store.offer(history, offer, false));
    expect(names(onHistory)).toEqual(names(onFresh));
    for (const [, , start, end] of onHistory.filter((c) => c[0] === "XRANGE")) {
      expect(start).toBe(end);
    }
  }
});

test("a settlement on the 10,000-record chat answers the lists of that very step", async () => {
  let answer: Awaited<ReturnType<SuggestionStore["settleAndList"]>> | undefined;
  const settleCommands = await scriptCommands(async () => {
    answer = await store.settleAndList(history, "o8", "drafted");
  });
  expect(answer?.outcome.kind).toBe("recorded");
  expect(answer?.lists).toEqual(foldLog(history, await store.readLog(history)));
  expect(answer?.lists.byId.get("o8")?.state).toBe(SuggestionState.DRAFTED);
  // Single entries, and the entries after the version the reader held (a delta,
  // lua/readLists-2.lua): a bounded count after an id, never the history.
  for (const [, , start, end, count, most] of settleCommands.filter((c) => c[0] === "XRANGE")) {
    if (start === end) continue;
    expect([start?.startsWith("("), end, count?.toUpperCase()]).toEqual([true, "+", "COUNT"]);
    expect(Number(most)).toBeLessThanOrEqual(33);
  }
});
