/** The data the benchmark's scenarios need, written through the service's own store. */
import { randomUUID } from "node:crypto";
import { FolderKind } from "../gen/oda/suggest/v1/chat_host_pb.js";
import { EmbeddedChatHost } from "../server/host/embedded-host.js";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { buildChat } from "./history.js";

/** How many of each: enough for a warm-up and a window on a fast day (Start at 3,700 a second takes 37,000). */
const SIZES = {
  freshSessions: Number(process.env.BENCH_FRESH_SESSIONS ?? 120_000),
  settleChats: Number(process.env.BENCH_SETTLE_CHATS ?? 50_000),
  startSessions: Number(process.env.BENCH_START_SESSIONS ?? 14_000),
  changeChats: 64,
};

/** The workspace of every session the bench puts. */
export const BENCH_WORKSPACE = "ws-bench";

/** Ids of what was prepared, per scenario. */
export interface BenchData {
  /** Chats with no offer yet: SuggestTask gives each call a fresh one. */
  readonly freshSessions: string[];
  /** A chat of 3 open (o7 to o9) and 7 settled offers (bench/history.ts `buildChat`): Get, List. */
  readonly readChat: string;
  /** One such chat per calls-in-flight slot: ListSuggestions right after a change. */
  readonly changeChats: string[];
  /** Chats holding one open offer, `o0`: Dismiss, Restore, Draft of it, in turn. */
  readonly settleChats: string[];
  /** A `buildChat` chat its 1,000 watchers watch. */
  readonly fanoutChat: string;
  /** Open suggestions, each started once. */
  readonly startPairs: [string, string][];
  /** Open suggestions for the 50-concurrent-Starts measurement. */
  readonly concurrencyPairs: [string, string][];
  /** Chats the idle watchers watch, and the ones the measured offers go to. */
  readonly watchSessions: string[];
  readonly watchOfferSessions: string[];
}

/** `fn` over `items`, `size` of them at once. */
export async function inBatches<T>(
  items: T[],
  size: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/** `n` ids `<prefix>-0` to `<prefix>-<n - 1>`. */
export const ids = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

/** Writes through the service's own embedded host and store. */
export function writers(redis: ReturnType<typeof createRedisClient>) {
  const host = new EmbeddedChatHost(redis);
  const store = new SuggestionStore(redis);
  const putSessions = (sessions: string[]) =>
    inBatches(sessions, 2_000, (sessionId) =>
      host.putSession({
        sessionId,
        workspaceId: BENCH_WORKSPACE,
        folder: FolderKind.NORMAL,
        settings: { model: "m" },
      }),
    );
  /** An offer recorded in `sessionId`, of `workspaceId` ('': of none). */
  const offerTo = (sessionId: string, turn: number, id: string = randomUUID(), workspaceId = "") =>
    store.offer(
      sessionId,
      {
        id,
        turnId: `t${turn}`,
        toolCallId: "",
        title: "Bench offer",
        tldr: "Worth it",
        brief: "Do it.",
      },
      false,
      workspaceId,
    );
  /**
   * Three open offers in each session, of its workspace as SuggestTask records them (a
   * Start needs the session's workspace, so its offers are announced in that workspace's
   * inbox before `started`): (session, suggestion) pairs to start.
   */
  const openPairs = async (sessions: string[], concurrency: number) => {
    const pairs: [string, string][] = [];
    await putSessions(sessions);
    await inBatches(sessions, concurrency, async (sessionId) => {
      for (let i = 0; i < 3; i++) {
        const offered = await offerTo(sessionId, i, randomUUID(), BENCH_WORKSPACE);
        if (offered.kind === "recorded") pairs.push([sessionId, offered.suggestion.id]);
      }
    });
    return pairs;
  };
  return { store, putSessions, offerTo, openPairs };
}

/** Writes sessions, offers and settlements for every scenario. */
export async function prepare(redisUrl: string): Promise<BenchData> {
  const redis = createRedisClient(redisUrl);
  const { store, putSessions, offerTo, openPairs } = writers(redis);
  const watchSessions = ids("watch", 100);
  const data: BenchData = {
    freshSessions: ids("fresh", SIZES.freshSessions),
    readChat: "read-0",
    changeChats: ids("change", SIZES.changeChats),
    settleChats: ids("settle", SIZES.settleChats),
    fanoutChat: "fanout-0",
    startPairs: await openPairs(ids("start", SIZES.startSessions), 200),
    concurrencyPairs: await openPairs(ids("concurrent", 40), 40),
    watchSessions,
    watchOfferSessions: watchSessions.slice(0, 10),
  };
  await putSessions([...data.freshSessions, ...data.watchSessions]);
  await inBatches([data.readChat, data.fanoutChat, ...data.changeChats], 70, (sessionId) =>
    buildChat(store, sessionId),
  );
  await inBatches(data.settleChats, 2_000, (sessionId) => offerTo(sessionId, 0, "o0"));
  await redis.quit();
  return data;
}
