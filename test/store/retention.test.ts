import { expect, test } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { configFromEnv } from "../../server/config.js";
import { sessionKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { putSession, uniqueId } from "../support/harness.js";
import { keysHolding } from "../support/redis-dump.js";
import { useTestServer } from "../support/server-fixture.js";
import { keysOf, offer, storeOffer } from "../support/suggest.js";

/*
 * RETENTION_DAYS: every key of a chat carries an expiry after each kind of write, renewed
 * by it, and a chat that expired leaves its workspace's inbox at the next read.
 */

const DAY_MS = 86_400_000;
const t = useTestServer({ settings: { retentionDays: 1 } });

/**
 * Shortens every key of the chats to ten minutes, runs `write`, and answers each key of
 * the chats with its expiry after it: a key the write renewed has about a day again.
 */
async function renewedBy(sessionIds: string[], write: () => Promise<unknown>) {
  for (const id of sessionIds) {
    for (const key of await keysOf(t.redis, id)) await t.redis.pexpire(key, 600_000);
  }
  await write();
  const ttls: Record<string, number> = {};
  for (const id of sessionIds) {
    for (const key of await keysOf(t.redis, id)) ttls[key] = await t.redis.pttl(key);
  }
  return ttls;
}

/** Every key with an expiry of more than ten minutes and at most a day. */
function expectRenewed(ttls: Record<string, number>, keys: string[]) {
  for (const key of keys) {
    expect([key, ttls[key]]).toEqual([key, expect.any(Number)]);
    expect([key, (ttls[key] ?? 0) > 600_000 && (ttls[key] ?? 0) <= DAY_MS]).toEqual([key, true]);
  }
}

test("every key of a chat carries an expiry after each kind of write, renewed by it", async () => {
  const { clients } = t;
  const sessionId = uniqueId();
  await putSession(clients, { sessionId, workspaceId: uniqueId("ws") });
  const log = sessionKeys(sessionId);
  const hostSession = `host:{${sessionId}}:session`;
  expect(await t.redis.pttl(hostSession)).toBeGreaterThan(600_000);

  const ids: string[] = [];
  let ttls = await renewedBy([sessionId], async () => {
    for (const title of ["One", "Two", "Three"]) {
      ids.push((await offer(clients, { sessionId, title })).suggestion?.id ?? "");
    }
  });
  // The offer, and the host's session record the offer read.
  expectRenewed(ttls, [log.log, log.projection, hostSession]);
  const [one, two, three] = ids as [string, string, string];

  for (const settle of [
    () => clients.suggestions.dismissSuggestion({ sessionId, suggestionId: one }),
    () => clients.suggestions.restoreSuggestion({ sessionId, suggestionId: one }),
    () => clients.suggestions.draftSuggestion({ sessionId, suggestionId: two }),
    () =>
      clients.suggestions.withdrawSuggestion({
        context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
        args: { title: "One", reason: "Done." },
      }),
  ]) {
    ttls = await renewedBy([sessionId], settle);
    expectRenewed(ttls, [log.log, log.projection]);
  }

  let chatId = "";
  ttls = await renewedBy([sessionId], async () => {
    ({ chatId } = await clients.suggestions.startSuggestion({ sessionId, suggestionId: three }));
  });
  expectRenewed(ttls, [log.log, log.projection]);
  // The started chat's records, written by the Start, expire too.
  const started = await keysOf(t.redis, chatId);
  expect(started.length).toBeGreaterThan(0);
  for (const key of started) {
    const ttl = await t.redis.pttl(key);
    expect([key, ttl > 0 && ttl <= DAY_MS]).toEqual([key, true]);
  }
});

test("a chat that expired leaves its workspace's inbox at the next read, and nothing of it is left", async () => {
  const retentionMs = 300;
  const redis = t.redis;
  const inbox = new WorkspaceInbox(redis, { retentionMs });
  const expiring = new SuggestionStore(redis, inbox, undefined, retentionMs);
  const lasting = new SuggestionStore(redis, new WorkspaceInbox(redis));
  const workspaceId = uniqueId("ws");
  const [gone, kept] = [uniqueId(), uniqueId()];
  const goneOffer = await storeOffer(expiring, gone, workspaceId);
  const keptOffer = await storeOffer(lasting, kept, workspaceId);
  const listed = async () =>
    (await inbox.page(workspaceId, 50, "")).entries.map((e) => e.suggestion.id).sort();
  expect(await listed()).toEqual([goneOffer, keptOffer].sort());
  // Redis expires the chat's keys (waited for, not timed).
  for (let i = 0; i < 500 && (await redis.exists(sessionKeys(gone).log)) === 1; i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(await redis.exists(sessionKeys(gone).log, sessionKeys(gone).projection)).toBe(0);
  expect(await listed()).toEqual([keptOffer]);
  expect(await keysHolding(redis, [gone])).toEqual([]);
});

test("RETENTION_DAYS: unset keeps chats for ever; a whole number of days from 1 to 36500, else the start stops naming it", () => {
  expect(configFromEnv({}).retentionDays).toBeUndefined();
  expect(configFromEnv({ RETENTION_DAYS: "30" }).retentionDays).toBe(30);
  for (const bad of ["0", "1.5", "days", "36501"]) {
    expect(() => configFromEnv({ RETENTION_DAYS: bad })).toThrow(
      `RETENTION_DAYS must be a whole number from 1 to 36500 (got "${bad}")`,
    );
  }
});
