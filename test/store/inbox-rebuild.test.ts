import { spawn } from "node:child_process";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { rebuildInboxes } from "../../server/store/inbox-rebuild.js";
import { workspaceKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { ownRedis, redisClient, uniqueId } from "../support/harness.js";
import { startMonitor } from "../support/monitor.js";

let redisServer: RedisServerProcess & { remove: () => void };
let redis: RedisClient;
let store: SuggestionStore;
beforeAll(async () => {
  redisServer = await ownRedis();
  redis = redisClient(redisServer.url);
  store = new SuggestionStore(redis);
});
afterAll(async () => {
  redis.disconnect();
  await redisServer.stop();
  redisServer.remove();
});

/** 30 chats over two workspaces, 2 offers each, one of them settled in every third chat. */
async function workspaces(): Promise<[string, string]> {
  const pair: [string, string] = [uniqueId("ws"), uniqueId("ws")];
  for (let c = 0; c < 30; c++) {
    const sessionId = uniqueId();
    for (let i = 0; i < 2; i++) {
      const offer = { id: `o${i}`, turnId: `t${i}`, toolCallId: "", title: "T", tldr: "R" };
      await store.offer(sessionId, { ...offer, brief: "B" }, false, pair[c % 2] as string);
    }
    if (c % 3 === 0) await store.settle(sessionId, "o0", "dismissed");
  }
  return pair;
}

async function everything(workspaceId: string): Promise<string[]> {
  const got: string[] = [];
  let after = "";
  do {
    const page = await store.inbox.page(workspaceId, 7, after);
    got.push(...page.entries.map((e) => `${e.suggestion.sessionId}/${e.suggestion.id}`));
    after = page.next;
  } while (after !== "");
  return got;
}

async function deleteIndex(workspaceId: string): Promise<void> {
  const k = workspaceKeys(workspaceId);
  await redis.del(k.offers, k.chats, k.pending);
}

test("a deleted index is rebuilt from the logs, with SCAN, to the same answer", async () => {
  const pair = await workspaces();
  const before = await Promise.all(pair.map(everything));
  expect(before.map((list) => list.length)).toEqual([25, 25]);
  for (const ws of pair) await deleteIndex(ws);
  expect(await Promise.all(pair.map(everything))).toEqual([[], []]);

  const monitor = await startMonitor(redisServer.port);
  const report = await rebuildInboxes(redis, { scanCount: 5 });
  const commands = await monitor.stop();
  expect(report).toEqual({ chats: 30, announced: 30 });
  expect(commands.some((c) => c.name === "scan")).toBe(true);
  expect(commands.some((c) => c.name === "keys")).toBe(false);
  expect(await Promise.all(pair.map(everything))).toEqual(before);
  // Rebuilt while a chat offers again: offers after it go through the same protocol.
  const sessionId = uniqueId();
  const offer = { id: "late", turnId: "late", toolCallId: "", title: "T", tldr: "R", brief: "B" };
  await store.offer(sessionId, offer, false, pair[0]);
  expect((await everything(pair[0]))[0]).toBe(`${sessionId}/late`);
});

test("`main.js rebuild-inbox` rebuilds and exits", async () => {
  const [ws] = await workspaces();
  const before = await everything(ws);
  await deleteIndex(ws);
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts", "rebuild-inbox"], {
      env: { ...process.env, REDIS_URL: redisServer.url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(out))));
  });
  expect(output).toMatch(/^rebuilt the inbox of \d+ chat\(s\) from \d+ log\(s\)$/m);
  expect(await everything(ws)).toEqual(before);
}, 30_000);
