import { randomUUID } from "node:crypto";
import { OPEN_LIMIT } from "../server/domain/limits.js";
import { sessionKeys } from "../server/store/keys.js";
import type { ScriptReply } from "../server/store/scripts.js";
import { createRedisClient } from "../server/store/scripts.js";
import { type NewOffer, SuggestionStore } from "../server/store/suggestion-store.js";

/*
 * History independence: a chat whose stream holds 10,000 records must list and
 * offer as fast as a fresh chat. Both chats hold the same 10 offers (3 open, 7 settled);
 * only the length of their streams differs.
 */

/** Offers of every bench chat. */
const OFFERS = 10;
/** Settled offers of every bench chat; the rest stay open. */
const SETTLED = 7;
/** Records a chat of `OFFERS` offers holds before any padding. */
export const BASE_RECORDS = OFFERS + SETTLED;

/** The offer `i` of a bench chat, with its own turn and tool call. */
export function benchOffer(i: number): NewOffer {
  return {
    id: `o${i}`,
    turnId: `turn-${i}`,
    toolCallId: `call-${i}`,
    title: `Follow-up ${i}`,
    tldr: "Worth doing next",
    brief: `Do follow-up ${i}, then report what changed.`,
  };
}

/**
 * A change of a bench chat's o9, as another instance would make it: dismissed, then
 * restored, in turn. Answers what went wrong, if anything.
 */
export function changeOfO9(
  store: SuggestionStore,
  sessionId: string,
): () => Promise<string | undefined> {
  let dismissed = false;
  return async () => {
    const outcome = dismissed ? "restored" : "dismissed";
    dismissed = !dismissed;
    const settled = await store.settle(sessionId, "o9", outcome);
    return settled.kind === "recorded" ? undefined : `change answered ${settled.kind}`;
  };
}

/**
 * Builds a chat of 10 offers, 3 open (o7 to o9) and 7 settled (drafted, dismissed and
 * started in turn), whose stream holds exactly `records` records (at least
 * `BASE_RECORDS`): the padding is dismiss-and-restore cycles of o9, sent in pipelines
 * through the settle script, plus one record of an unknown kind when the count is odd.
 */
export async function buildChat(
  store: SuggestionStore,
  sessionId: string,
  records: number = BASE_RECORDS,
): Promise<void> {
  if (records < BASE_RECORDS) throw new Error(`a bench chat holds at least ${BASE_RECORDS}`);
  const outcomes = ["drafted", "dismissed", "started"] as const;
  for (let i = 0; i < OFFERS; i++) {
    const offered = await store.offer(sessionId, benchOffer(i), false);
    if (offered.kind !== "recorded") throw new Error(`offer o${i} answered ${offered.kind}`);
    if (i >= SETTLED) continue;
    const outcome = outcomes[i % outcomes.length] ?? "drafted";
    const settled = await store.settle(sessionId, `o${i}`, outcome, `chat-${i}`);
    if (settled.kind !== "recorded") throw new Error(`settle o${i} answered ${settled.kind}`);
  }
  const keys = sessionKeys(sessionId);
  let padding = records - BASE_RECORDS;
  if (padding % 2 === 1) {
    await store.redis.xadd(keys.log, "*", "type", "note", "id", "o9", "text", "another writer");
    padding--;
  }
  const cycles = padding / 2;
  for (let done = 0; done < cycles; done += 500) {
    const pipeline = store.redis.pipeline();
    for (let c = done; c < Math.min(cycles, done + 500); c++) {
      for (const outcome of ["dismissed", "restored"]) {
        const limit = String(OPEN_LIMIT);
        pipeline.settle(keys.log, keys.projection, keys.changes, "o9", outcome, "", limit);
      }
    }
    for (const [err, reply] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      if ((reply as ScriptReply)[0] !== 0) throw new Error("a padding settlement was refused");
    }
  }
}

/** Mean microseconds per call of each measured path, per chat. */
export interface HistoryBenchResult {
  readonly fresh: { readonly listUs: number; readonly offerUs: number };
  readonly history10k: { readonly listUs: number; readonly offerUs: number };
}

/**
 * Times, in this process, N sequential calls of the store's list read
 * (`SuggestionStore.lists`, lua/readLists-2.lua) and of the offer script on a fresh
 * chat (17 records) and on a chat of 10,000 records, both holding 3 open and 7 settled
 * offers, and answers the mean microseconds per call. The offer path is a retry of an
 * offer's tool call (same `tool_call_id`, the duplicate path of lua/offer-3.lua): it
 * catches the projection up, looks the call up and reads the first record back from
 * the stream, records nothing and so can repeat. (A new offer would be refused at the
 * lifetime limit, check 5, before reading any record.) The four cases take turns call
 * by call, so that the machine's drift spreads over all of them alike; compare them as
 * ratios. Leaves no keys behind. A few seconds.
 */
export async function runHistoryBench(redisUrl: string): Promise<HistoryBenchResult> {
  const redis = createRedisClient(redisUrl);
  const store = new SuggestionStore(redis);
  const fresh = `bench-fresh-${randomUUID()}`;
  const history = `bench-history-${randomUUID()}`;
  try {
    await buildChat(store, fresh);
    await buildChat(store, history, 10_000);
    const retry = benchOffer(0);
    const cases = [
      () => store.lists(fresh),
      () => store.offer(fresh, retry, false),
      () => store.lists(history),
      () => store.offer(history, retry, false),
    ];
    const totals = cases.map(() => 0n);
    const warmUp = 300;
    const calls = 2_000;
    for (let i = -warmUp; i < calls; i++) {
      // Call by call in turn, starting with a different case each time, so that every
      // case meets the same load of the machine and none always follows another.
      for (let k = 0; k < cases.length; k++) {
        const c = (i + warmUp + k) % cases.length;
        const started = process.hrtime.bigint();
        await cases[c]?.();
        if (i >= 0) totals[c] = (totals[c] ?? 0n) + process.hrtime.bigint() - started;
      }
    }
    const us = (c: number) => Number(totals[c] ?? 0n) / 1_000 / calls;
    return {
      fresh: { listUs: us(0), offerUs: us(1) },
      history10k: { listUs: us(2), offerUs: us(3) },
    };
  } finally {
    for (const sessionId of [fresh, history]) {
      const keys = sessionKeys(sessionId);
      await redis.del(keys.log, keys.projection).catch(() => 0);
    }
    redis.disconnect();
  }
}
