/** The data the benchmark's scenarios need, written through the service's own store. */
import { randomUUID } from "node:crypto";
import { FolderKind } from "../gen/oda/suggest/v1/chat_host_pb.js";
import { EmbeddedChatHost } from "../server/host/embedded-host.js";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";

/** Ids of what was prepared, per scenario. */
export interface BenchData {
  /** Chats with no offer yet: SuggestTask gives each call a fresh one. */
  readonly freshSessionsA: string[];
  readonly freshSessionsB: string[];
  /** Chats holding 3 open and 7 settled offers. */
  readonly listChats: string[];
  /** Open suggestions, each started once. */
  readonly startPairs: [string, string][];
  /** Open suggestions for the 50-concurrent-Starts measurement. */
  readonly concurrencyPairs: [string, string][];
  /** Chats the idle watchers watch, and the ones the measured offers go to. */
  readonly watchSessions: string[];
  readonly watchOfferSessions: string[];
}

async function inBatches<T>(
  items: T[],
  size: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/** Writes sessions, offers and settlements for every scenario. */
export async function prepare(redisUrl: string): Promise<BenchData> {
  const redis = createRedisClient(redisUrl);
  const host = new EmbeddedChatHost(redis);
  const store = new SuggestionStore(redis);
  const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const putSessions = (sessions: string[]) =>
    inBatches(sessions, 2_000, (sessionId) =>
      host.putSession({
        sessionId,
        workspaceId: "ws-bench",
        folder: FolderKind.NORMAL,
        settings: { model: "m" },
      }),
    );
  const offerTo = (sessionId: string, turn: number) =>
    store.offer(
      sessionId,
      {
        id: randomUUID(),
        turnId: `t${turn}`,
        toolCallId: "",
        title: "Bench offer",
        tldr: "Worth it",
        brief: "Do it.",
      },
      false,
    );

  const data: BenchData = {
    freshSessionsA: ids("fresh-a", 80_000),
    freshSessionsB: ids("fresh-b", 40_000),
    listChats: ids("list", 300),
    startPairs: [],
    concurrencyPairs: [],
    watchSessions: ids("watch", 100),
    watchOfferSessions: [],
  };
  data.watchOfferSessions.push(...data.watchSessions.slice(0, 10));
  await putSessions([
    ...data.freshSessionsA,
    ...data.freshSessionsB,
    ...data.listChats,
    ...data.watchSessions,
  ]);

  await inBatches(data.listChats, 50, async (sessionId) => {
    for (let i = 0; i < 10; i++) {
      const offered = await offerTo(sessionId, i);
      if (i < 7 && offered.kind === "recorded") {
        await store.settle(sessionId, offered.suggestion.id, i % 2 === 0 ? "dismissed" : "drafted");
      }
    }
  });

  const startSessions = ids("start", 5_000);
  const concurrencySessions = ids("concurrent", 30);
  await putSessions([...startSessions, ...concurrencySessions]);
  await inBatches(startSessions, 200, async (sessionId) => {
    for (let i = 0; i < 3; i++) {
      const offered = await offerTo(sessionId, i);
      if (offered.kind === "recorded") data.startPairs.push([sessionId, offered.suggestion.id]);
    }
  });
  await inBatches(concurrencySessions, 30, async (sessionId) => {
    const offered = await offerTo(sessionId, 0);
    if (offered.kind === "recorded") data.concurrencyPairs.push([sessionId, offered.suggestion.id]);
  });
  await redis.quit();
  return data;
}
