import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { beforeAll, describe, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { WatchWorkspaceSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { startLockKey, workspaceKeys } from "../../server/store/keys.js";
import { STALE_ANNOUNCEMENT_MS, WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { type Clients, connectErrorOf, putSession, uniqueId } from "../support/harness.js";
import { ids, watch } from "../support/lists.js";
import { keysHolding } from "../support/redis-dump.js";
import { useTestServer } from "../support/server-fixture.js";
import { keysOf, offer } from "../support/suggest.js";

/*
 * DeleteSuggestions erases a chat so that no key or value in Redis holds its id or any of
 * its text, leaves every other chat of its workspace as it was, and answers the same when
 * repeated. Run unchanged on a Redis Cluster (vitest.cluster.config.ts), where the chat's
 * keys and its workspace's inbox live in different slots.
 */

let clients: Clients;
let redis: RedisClient;
const service = useTestServer();
beforeAll(() => {
  ({ clients, redis } = service);
});

/** A chat of `workspaceId` whose every text carries a marker of its own. */
async function chatWithText(workspaceId: string, offers: number) {
  const sessionId = uniqueId();
  const marker = `m${randomUUID().replaceAll("-", "")}`;
  await putSession(clients, { sessionId, workspaceId });
  const texts: string[] = [];
  const suggestionIds: string[] = [];
  for (let i = 0; i < offers; i++) {
    const [title, tldr, brief] = [
      `Title ${marker}${i}`,
      `Tldr ${marker}${i}`,
      `Brief ${marker}${i}`,
    ];
    texts.push(title, tldr, brief);
    const res = await offer(clients, {
      sessionId,
      title,
      tldr,
      brief,
      toolCallId: `c-${marker}${i}`,
    });
    suggestionIds.push(res.suggestion?.id ?? "");
  }
  return { sessionId, marker, texts, suggestionIds };
}

/** Every suggestion id an inbox page lists. */
async function inboxIds(workspaceId: string): Promise<string[]> {
  const page = await clients.suggestions.listWorkspaceSuggestions({ workspaceId, pageSize: 50 });
  return ids(page.suggestions);
}

/** A running WatchWorkspaceSuggestions whose messages are collected. */
function watchInbox(workspaceId: string) {
  const abort = new AbortController();
  const messages: WatchWorkspaceSuggestionsResponse[] = [];
  void (async () => {
    for await (const m of clients.suggestions.watchWorkspaceSuggestions(
      { workspaceId },
      { signal: abort.signal },
    )) {
      if (!m.heartbeat) messages.push(m);
    }
  })().catch(() => undefined);
  /** Waits until the newest message lists exactly `expected` (sorted). */
  const until = async (expected: string[]) => {
    const end = Date.now() + 5_000;
    const want = [...expected].sort().join();
    while (
      (ids(messages.at(-1)?.suggestions ?? [])
        .sort()
        .join() ?? "") !== want
    ) {
      if (Date.now() > end) throw new Error(`the inbox watch never listed [${want}]`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { until, cancel: () => abort.abort() };
}

describe("DeleteSuggestions", () => {
  test("no key or value holds the chat's id or text afterwards; another chat of the workspace is intact", async () => {
    const workspaceId = uniqueId("ws");
    const gone = await chatWithText(workspaceId, 3);
    const kept = await chatWithText(workspaceId, 2);
    const [first, second, third] = gone.suggestionIds as [string, string, string];
    // Every kind of record and key the chat can have: settlements of each kind, a
    // withdrawal, a start lock held, the host's records, its inbox entries read.
    await clients.suggestions.draftSuggestion({ sessionId: gone.sessionId, suggestionId: first });
    await clients.suggestions.dismissSuggestion({
      sessionId: gone.sessionId,
      suggestionId: second,
    });
    await clients.suggestions.restoreSuggestion({
      sessionId: gone.sessionId,
      suggestionId: second,
    });
    await clients.suggestions.withdrawSuggestion({
      context: { sessionId: gone.sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
      args: { title: `Title ${gone.marker}1`, reason: `Reason ${gone.marker}` },
    });
    await redis.set(startLockKey(gone.sessionId, third), "a-holder", "PX", 60_000);
    await clients.host.postMessage({
      chatId: gone.sessionId,
      idempotencyKey: "k1",
      author: MessageAuthor.PERSON,
      text: `Message ${gone.marker}`,
    });
    expect((await inboxIds(workspaceId)).sort()).toEqual([third, ...kept.suggestionIds].sort());
    const needles = [gone.sessionId, gone.marker, ...gone.texts];
    expect((await keysHolding(redis, needles)).length).toBeGreaterThan(0);
    const keptBefore = await clients.suggestions.listSuggestions({ sessionId: kept.sessionId });
    const keptKeys = (await keysOf(redis, kept.sessionId)).sort();

    expect(await clients.suggestions.deleteSuggestions({ sessionId: gone.sessionId })).toEqual(
      expect.objectContaining({}),
    );

    expect(await keysHolding(redis, needles)).toEqual([]);
    const lists = await clients.suggestions.listSuggestions({ sessionId: gone.sessionId });
    expect([lists.open, lists.settled]).toEqual([[], []]);
    const settlements = await clients.suggestions.listSettlements({
      sessionId: gone.sessionId,
      after: "",
    });
    expect(settlements.settlements).toEqual([]);
    const missing = await connectErrorOf(
      clients.suggestions.getSuggestion({ sessionId: gone.sessionId, suggestionId: third }),
    );
    expect(missing.code).toBe(Code.NotFound);
    expect(await inboxIds(workspaceId)).toEqual([...kept.suggestionIds].reverse());
    // The reads above wrote nothing back.
    expect(await keysHolding(redis, needles)).toEqual([]);
    // The other chat is as it was, key for key.
    expect(await clients.suggestions.listSuggestions({ sessionId: kept.sessionId })).toEqual(
      keptBefore,
    );
    expect((await keysOf(redis, kept.sessionId)).sort()).toEqual(keptKeys);

    // Repeated: the same answer, and still nothing.
    await clients.suggestions.deleteSuggestions({ sessionId: gone.sessionId });
    expect(await keysHolding(redis, needles)).toEqual([]);
  });

  test("a chat that never offered anything: the same answer, nothing written", async () => {
    const sessionId = uniqueId();
    await clients.suggestions.deleteSuggestions({ sessionId });
    await clients.suggestions.deleteSuggestions({ sessionId });
    expect(await keysOf(redis, sessionId)).toEqual([]);
  });

  test("its watchers get the empty lists, its workspace's watchers see it gone", async () => {
    const workspaceId = uniqueId("ws");
    const gone = await chatWithText(workspaceId, 2);
    const kept = await chatWithText(workspaceId, 1);
    const w = watch(clients, gone.sessionId);
    const inbox = watchInbox(workspaceId);
    try {
      await w.waitFor((m) => m.open.length === 2);
      await inbox.until([...gone.suggestionIds, ...kept.suggestionIds]);
      const from = w.messages.length;
      await clients.suggestions.deleteSuggestions({ sessionId: gone.sessionId });
      await w.waitFor((m) => !m.heartbeat && m.open.length === 0 && m.settled.length === 0, from);
      await inbox.until(kept.suggestionIds);
    } finally {
      w.cancel();
      inbox.cancel();
    }
  });

  test("a chat started from one of its suggestions is a chat of its own and stays", async () => {
    const workspaceId = uniqueId("ws");
    const gone = await chatWithText(workspaceId, 1);
    const suggestionId = gone.suggestionIds[0] ?? "";
    const { chatId } = await clients.suggestions.startSuggestion({
      sessionId: gone.sessionId,
      suggestionId,
    });
    await clients.suggestions.deleteSuggestions({ sessionId: gone.sessionId });
    const { chat } = await clients.local.getChat({ chatId });
    expect(chat?.chatId).toBe(chatId);
    expect(chat?.messages.map((m) => m.text).join()).toContain(`Brief ${gone.marker}0`);
    // Only the started chat's own keys still name the chat it came from (its origin).
    const holding = await keysHolding(redis, [gone.sessionId, ...gone.texts]);
    expect(holding.map((h) => h.key).filter((k) => !k.includes(`{${chatId}}`))).toEqual([]);
  });

  test("a settlement's announcement on an erased chat is dropped by an inbox read once stale", async () => {
    const workspaceId = uniqueId("ws");
    const gone = await chatWithText(workspaceId, 1);
    await clients.suggestions.deleteSuggestions({ sessionId: gone.sessionId });
    // As a settlement of the erased chat leaves it (announced, then it found nothing),
    // older than any call may last.
    const keys = workspaceKeys(workspaceId);
    const old = String((Date.now() - STALE_ANNOUNCEMENT_MS - 60_000) * 1000);
    await redis.hset(keys.chats, `t:${gone.sessionId}`, old);
    await redis.sadd(keys.pending, gone.sessionId);
    expect(await inboxIds(workspaceId)).toEqual([]);
    expect(await keysHolding(redis, [gone.sessionId])).toEqual([]);
    // A fresh one stays: its writer may still append.
    const fresh = await new WorkspaceInbox(redis).announce(workspaceId, gone.sessionId);
    expect(await inboxIds(workspaceId)).toEqual([]);
    expect(await redis.hget(keys.chats, `t:${gone.sessionId}`)).toBe(String(fresh));
  });

  test("a session id that is not one: INVALID_ARGUMENT before Redis", async () => {
    const err = await connectErrorOf(
      clients.suggestions.deleteSuggestions({ sessionId: "not an id" }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe(
      "session_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    );
  });
});
