import { afterAll, beforeAll, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import {
  type Clients,
  grpcClients,
  ownRedis,
  putSession,
  redisClient,
  type ServiceProcess,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { logRecords } from "../support/lists.js";
import { keysOf, offerOne } from "../support/suggest.js";

// Two service processes on one Redis of this test's own (so that its command counts are
// this test's alone), each with the embedded host on that Redis.
let redisServer: RedisServerProcess & { remove: () => void };
let services: ServiceProcess[] = [];
let clients: Clients[] = [];
let redis: RedisClient;
beforeAll(async () => {
  redisServer = await ownRedis();
  services = await Promise.all([spawnService(redisServer.url), spawnService(redisServer.url)]);
  clients = services.map((s) => grpcClients(s.url));
  redis = redisClient(redisServer.url);
});
afterAll(async () => {
  redis?.disconnect();
  await Promise.all(services.map((s) => s.kill("SIGTERM")));
  await redisServer?.stop();
  redisServer?.remove();
});

/** Calls of each Redis command so far, from INFO commandstats. */
async function commandCalls(): Promise<Record<string, number>> {
  const info = await redis.info("commandstats");
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) {
    calls[match[1] as string] = Number(match[2]);
  }
  return calls;
}

test("50 concurrent Starts over two processes create one chat with one brief, and all answer it", async () => {
  const [a, b] = clients as [Clients, Clients];
  const sessionId = uniqueId();
  await putSession(a, { sessionId });
  const offer = await offerOne(b, sessionId, "Port the tests");
  const before = await commandCalls();
  const started = Date.now();

  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      (i % 2 === 0 ? a : b).suggestions.startSuggestion({ sessionId, suggestionId: offer.id }),
    ),
  );
  const elapsed = Date.now() - started;
  const after = await commandCalls();

  const chatIds = new Set(answers.map((r) => r.chatId));
  expect(chatIds.size).toBe(1);
  const [chatId] = chatIds as Set<string>;
  for (const r of answers) {
    expect(r.suggestion).toMatchObject({ id: offer.id, state: SuggestionState.STARTED, chatId });
  }
  const { chat } = await a.local.getChat({ chatId });
  expect(chat?.messages.map((m) => [m.author, m.text])).toEqual([
    [MessageAuthor.SUGGESTION, "Do the follow-up."],
  ]);
  const settled = (await logRecords(redis, sessionId)).filter((r) => r.type === "settled");
  expect(settled).toEqual([expect.objectContaining({ outcome: "started", chat: chatId })]);
  // One chat on the host, and no lock left behind.
  const chats = new Set<string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", "host:{chat-*}:chat", "COUNT", 1000);
    for (const key of keys) chats.add(key);
    cursor = next;
  } while (cursor !== "0");
  expect([...chats]).toEqual([`host:{${chatId}}:chat`]);
  expect((await keysOf(redis, sessionId)).filter((k) => k.includes(":start:"))).toEqual([]);

  // Concurrent Starts on one instance are one flight (rpc/start-flights.ts), and a flight
  // that finds the lock taken waits on the holder's message, not by polling: the lock is
  // tried about once per flight (a poller would try it again and again), and nobody sat
  // out the lock's lifetime. Whether the two instances' flights overlap is up to timing.
  const delta = (cmd: string) => (after[cmd] ?? 0) - (before[cmd] ?? 0);
  expect(delta("set")).toBeLessThanOrEqual(50 + 2 + 10);
  expect(delta("pttl")).toBeLessThanOrEqual(50);
  expect(elapsed).toBeLessThan(8_000);
});
