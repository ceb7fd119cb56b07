import { randomUUID } from "node:crypto";
import { describe, expect, test } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { type Clients, putSession, uniqueId } from "../support/harness.js";
import { ids } from "../support/lists.js";
import { foldLog } from "../support/model/fold.js";
import { keysHolding } from "../support/redis-dump.js";
import { useTestServer } from "../support/server-fixture.js";
import { keysOf, nextTurnId } from "../support/suggest.js";

/*
 * Offers, settlements and a Start racing DeleteSuggestions, many times over: the chat is
 * never half erased. Afterwards either nothing of it is left, or what is left is a chat
 * made anew by the writes that came after the erasure (its projection the fold of its
 * log); no inbox entry names a suggestion its chat does not hold open, and every open one
 * is listed; the text of every erased offer is nowhere but in a chat a Start answered.
 */

let clients: Clients;
let redis: RedisClient;
let store: SuggestionStore;
const service = useTestServer();

const ROUNDS = 40;

/** An offer of the chat straight through the store, its text marked; answers its id or "". */
async function storeOffer(sessionId: string, workspaceId: string, marker: string) {
  const id = randomUUID();
  const text = { title: `Title ${marker}`, tldr: `Tldr ${marker}`, brief: `Brief ${marker}` };
  const offer = { id, turnId: nextTurnId(), toolCallId: "", ...text };
  const outcome = await store.offer(sessionId, offer, false, workspaceId);
  return outcome.kind === "recorded" ? id : "";
}

/** Resolves after a random few milliseconds, so the racers interleave differently. */
const jitter = () => new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)));

describe("DeleteSuggestions", () => {
  test(`offers, settlements and a Start racing an erasure, ${ROUNDS} times: never a chat half erased`, async () => {
    ({ clients, redis } = service);
    store = new SuggestionStore(redis, new WorkspaceInbox(redis));
    for (let round = 0; round < ROUNDS; round++) {
      const workspaceId = uniqueId("ws");
      const sessionId = uniqueId();
      await putSession(clients, { sessionId, workspaceId });
      const markers = Array.from({ length: 4 }, () => `m${randomUUID().replaceAll("-", "")}`);
      const [m0, m1, m2, m3] = markers as [string, string, string, string];
      const first = await storeOffer(sessionId, workspaceId, m0);
      const second = await storeOffer(sessionId, workspaceId, m1);
      // The inbox has read the chat: its entries are in the index.
      await clients.suggestions.listWorkspaceSuggestions({ workspaceId });

      const started: string[] = [];
      await Promise.allSettled([
        jitter().then(() => clients.suggestions.deleteSuggestions({ sessionId })),
        jitter().then(() => storeOffer(sessionId, workspaceId, m2)),
        jitter().then(() => storeOffer(sessionId, workspaceId, m3)),
        jitter().then(() => store.settle(sessionId, first, "dismissed")),
        jitter().then(() => store.settle(sessionId, first, "restored")),
        jitter().then(async () => {
          const { chatId } = await clients.suggestions.startSuggestion({
            sessionId,
            suggestionId: second,
          });
          started.push(chatId);
        }),
        jitter().then(() => clients.suggestions.listWorkspaceSuggestions({ workspaceId })),
      ]);

      const keys = sessionKeys(sessionId);
      const log = await store.readLog(sessionId);
      const lists = await store.lists(sessionId);
      const where = `round ${round}`;
      if (log.length === 0) {
        // Erased after every write: not one key of the chat is left.
        expect([where, await keysOf(redis, sessionId)]).toEqual([where, []]);
        // Nor any value naming it, but a started chat's own records (its origin), and
        // the inbox announcement of a settlement that came after the erasure and found
        // nothing (dropped once stale: delete-suggestions.test.ts).
        const announced = [`inbox:{ws:${workspaceId}}:pending`, `inbox:{ws:${workspaceId}}:chats`];
        const naming = (await keysHolding(redis, [sessionId])).filter(
          (h) => !started.some((c) => h.key.includes(`{${c}}`)) && !announced.includes(h.key),
        );
        expect([where, JSON.stringify(naming)]).toEqual([where, "[]"]);
      } else {
        // Made anew by writes after the erasure: the projection is the fold of the log.
        expect([where, lists]).toEqual([where, foldLog(sessionId, log)]);
        expect(await redis.exists(keys.projection)).toBe(1);
      }
      // The inbox lists no offer the chat does not hold open: nothing of an erased one.
      // (An offer announced before the erasure's inbox step and appended after its last
      // look at the log reaches the index only at the chat's next write or a rebuild:
      // the chat made anew may be missing from it, never the other way round.)
      const page = await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
      const open = new Set(ids(lists.open));
      const dangling = ids(page.suggestions).filter((id) => !open.has(id));
      expect([where, dangling]).toEqual([where, []]);
      if (log.length === 0) expect([where, ids(page.suggestions)]).toEqual([where, []]);
      // The text of every offer the chat no longer holds is nowhere, but in a chat a
      // Start answered (a chat of its own, which keeps its title and brief).
      const held = JSON.stringify(log);
      const erased = markers.filter((m) => !held.includes(m));
      const holding = await keysHolding(redis, erased);
      const elsewhere = holding.filter((h) => !started.some((c) => h.key.includes(`{${c}}`)));
      expect([where, elsewhere]).toEqual([where, []]);
    }
  }, 120_000);
});
