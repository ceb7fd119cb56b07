import { ConnectError } from "@connectrpc/connect";
import { afterAll, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { LIFETIME_LIMIT, OPEN_LIMIT } from "../../server/domain/limits.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import {
  type Clients,
  grpcClients,
  putSession,
  redisClient,
  type ServiceProcess,
  spawnService,
  tempDir,
  uniqueId,
} from "../support/harness.js";
import { foldLog } from "../support/model/fold.js";
import { startTestRedis } from "../support/store-server.js";
import { offeredRecords } from "../support/suggest.js";

/*
 * Chaos, bounded (about 30 s): offers and Starts at 32 in flight over two service
 * instances on one Redis (AOF, appendfsync always), while the test kills one instance
 * and then Redis with kill -9 and starts them again. Afterwards the log must hold every
 * acknowledged offer once, every chat must be within the quotas, and every started
 * suggestion must have exactly one chat with exactly one brief.
 */

const IN_FLIGHT = 32;
const SESSIONS = 24;
const ENV = { START_LOCK_TTL_MS: "1000", LOG_LEVEL: "silent" };

const folder = tempDir("chaos");
let redisServer: RedisServerProcess;
const instances: (ServiceProcess | undefined)[] = [];
afterAll(async () => {
  for (const instance of instances) await instance?.kill();
  await redisServer?.stop().catch(() => undefined);
  folder.remove();
});

/** One instance's clients, or undefined while it is down. */
const live: (Clients | undefined)[] = [];

function anyLive(): Clients | undefined {
  const up = live.filter((c): c is Clients => c !== undefined);
  return up[Math.floor(Math.random() * up.length)];
}

async function startInstance(slot: number): Promise<void> {
  const instance = await spawnService(redisServer.url, ENV);
  instances[slot] = instance;
  live[slot] = grpcClients(instance.url);
}

async function killInstance(slot: number): Promise<void> {
  live[slot] = undefined;
  await instances[slot]?.kill("SIGKILL");
  instances[slot] = undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("kill -9 of an instance and of Redis under load loses no acknowledged offer and makes one chat per Start", async () => {
  redisServer = await startTestRedis({ dir: folder.dir });
  await Promise.all([startInstance(0), startInstance(1)]);
  const sessions = Array.from({ length: SESSIONS }, () => uniqueId("chaos"));
  for (const sessionId of sessions) await putSession(live[0] as Clients, { sessionId });

  /** Acknowledged offers by id, and the call that made each. */
  const acknowledged = new Map<string, { sessionId: string; callId: string }>();
  /** Acknowledged Starts: suggestion id → the chat the caller was told. */
  const started = new Map<string, string>();
  let stop = false;
  let calls = 0;
  let failures = 0;

  const worker = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const clients = anyLive();
      if (clients === undefined) {
        await sleep(50);
        continue;
      }
      const sessionId = sessions[(w + i) % SESSIONS] as string;
      calls++;
      try {
        const open = [...acknowledged].filter(
          ([id, a]) => a.sessionId === sessionId && !started.has(id),
        );
        if (i % 3 === 2 && open.length > 0) {
          const [suggestionId] = open[Math.floor(Math.random() * open.length)] as [string, unknown];
          const { chatId } = await clients.suggestions.startSuggestion({ sessionId, suggestionId });
          started.set(suggestionId, chatId);
        } else {
          // A runtime retries a tool call with the same id until it is answered.
          const callId = `call-${w}-${i}`;
          for (let attempt = 0; attempt < 20 && !stop; attempt++) {
            const c = anyLive();
            if (c === undefined) {
              await sleep(50);
              continue;
            }
            try {
              const res = await c.suggestions.suggestTask({
                context: { sessionId, turnId: callId, role: 1, toolCallId: callId },
                args: { title: `Chaos ${callId}`, tldr: "Why", brief: `Brief of ${callId}` },
              });
              acknowledged.set(res.suggestion?.id as string, { sessionId, callId });
              break;
            } catch (err) {
              if (!(err instanceof ConnectError)) throw err;
              // A quota refusal is an answer too: the call is done.
              if (err.rawMessage.startsWith("suggest_task")) break;
              await sleep(20);
            }
          }
        }
      } catch (err) {
        if (!(err instanceof ConnectError)) throw err;
        failures++;
      }
    }
  };
  const workers = Array.from({ length: IN_FLIGHT }, (_, w) => worker(w));

  await sleep(3_000);
  await killInstance(0);
  await sleep(1_500);
  await startInstance(0);
  await sleep(2_000);
  const port = redisServer.port;
  await redisServer.kill();
  await sleep(1_000);
  redisServer = await startTestRedis({ dir: folder.dir, port });
  await sleep(3_000);
  await killInstance(1);
  await sleep(1_000);
  await startInstance(1);
  await sleep(2_000);
  stop = true;
  await Promise.all(workers);

  expect(acknowledged.size).toBeGreaterThan(50);
  expect(started.size).toBeGreaterThan(5);
  expect(calls).toBeGreaterThan(failures);

  const redis = redisClient(redisServer.url);
  const store = new SuggestionStore(redis);
  const clients = live[0] as Clients;
  for (const sessionId of sessions) {
    const records = await offeredRecords(redis, sessionId);
    // No duplicates: one record per offer id and per tool call.
    const ids = records.map((r) => r.id);
    const calls = records.map((r) => r.call);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(calls).size).toBe(calls.length);
    const lists = foldLog(sessionId, await store.readLog(sessionId));
    expect(lists.open.length).toBeLessThanOrEqual(OPEN_LIMIT);
    expect(lists.byId.size).toBeLessThanOrEqual(LIFETIME_LIMIT);
    // Every started suggestion: one chat, with exactly one brief from the suggestion.
    for (const suggestion of lists.byId.values()) {
      if (suggestion.state !== SuggestionState.STARTED) continue;
      const { chat } = await clients.local.getChat({ chatId: suggestion.chatId });
      expect(chat?.origin?.suggestionId).toBe(suggestion.id);
      expect(chat?.messages.map((m) => [m.author, m.text])).toEqual([
        [MessageAuthor.SUGGESTION, suggestion.brief],
      ]);
    }
  }
  // Every acknowledged offer is on its chat's log, and every acknowledged Start answered
  // the chat the log records.
  for (const [id, { sessionId }] of acknowledged) {
    const lists = foldLog(sessionId, await store.readLog(sessionId));
    expect(lists.byId.has(id), `offer ${id} of ${sessionId}`).toBe(true);
    const chatId = started.get(id);
    if (chatId !== undefined) {
      expect(lists.byId.get(id)?.state).toBe(SuggestionState.STARTED);
      expect(lists.byId.get(id)?.chatId).toBe(chatId);
    }
  }
  // One chat per started suggestion: no other chat names the same origin.
  const origins = new Map<string, number>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", "host:*:chat", "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      const chatId = key.slice("host:{".length, -"}:chat".length);
      const { chat } = await clients.local.getChat({ chatId });
      const origin = `${chat?.origin?.sessionId}/${chat?.origin?.suggestionId}`;
      origins.set(origin, (origins.get(origin) ?? 0) + 1);
    }
  } while (cursor !== "0");
  for (const [origin, count] of origins) expect(count, origin).toBe(1);
  redis.disconnect();
}, 90_000);
