import { afterAll, expect, test } from "vitest";
import { sessionKeys } from "../../server/store/keys.js";
import { settleArgs, settleOutcome } from "../../server/store/script-replies.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { redisClient, uniqueId } from "../support/harness.js";
import { storeOffer } from "../support/suggest.js";

/*
 * A settlement of a workspace's offer is announced in the workspace the lists cache says
 * the offer is of, so it runs once instead of being refused first for want of a token
 * (suggestion-store.ts `announcedSettle`); a guess of the wrong workspace is no token
 * (lua/settle-3.lua ARGV[8]), so the inbox of the offer's own workspace is still told.
 */

const redis = redisClient();
afterAll(() => redis.quit());

/** An inbox that counts its announcements, by workspace. */
class CountingInbox extends WorkspaceInbox {
  readonly announced: string[] = [];
  override announce(workspaceId: string, sessionId: string, minimum = 0): Promise<number> {
    this.announced.push(workspaceId);
    return super.announce(workspaceId, sessionId, minimum);
  }
}

async function offerIn(store: SuggestionStore, workspaceId: string) {
  const sessionId = uniqueId("guess");
  return { sessionId, suggestionId: await storeOffer(store, sessionId, workspaceId) };
}

/** settle-3.lua called as is: a dismissal with `token`, announced in `workspace`. */
async function rawDismiss(sessionId: string, suggestionId: string, token: string, ws: string) {
  const keys = sessionKeys(sessionId);
  const args = settleArgs(suggestionId, "dismissed", "", token, ws);
  return settleOutcome(await redis.settle(keys.log, keys.projection, keys.changes, ...args));
}

test("an offer this instance has read: one announcement in its workspace, the settle run once", async () => {
  const inbox = new CountingInbox(redis);
  const store = new SuggestionStore(redis, inbox);
  const workspaceId = uniqueId("ws");
  const { sessionId, suggestionId } = await offerIn(store, workspaceId);
  await store.suggestion(sessionId, suggestionId);
  inbox.announced.length = 0;
  const tries: string[] = [];
  const settled = await store.announcedSettle(sessionId, suggestionId, async (token, ws) => {
    tries.push(`${ws}:${token === "" ? "none" : "token"}`);
    return rawDismiss(sessionId, suggestionId, token, ws);
  });
  expect(settled.kind).toBe("recorded");
  expect(tries).toEqual([`${workspaceId}:token`]);
  expect(inbox.announced).toEqual([workspaceId]);
  // And the inbox no longer lists it.
  expect((await store.inbox.page(workspaceId, 50, "")).entries).toEqual([]);
});

test("an offer it has not read: refused once, announced in the workspace the script names", async () => {
  const writer = new SuggestionStore(redis);
  const workspaceId = uniqueId("ws");
  const { sessionId, suggestionId } = await offerIn(writer, workspaceId);
  const inbox = new CountingInbox(redis);
  const store = new SuggestionStore(redis, inbox);
  const settled = await store.settleAndRead(sessionId, suggestionId, "drafted");
  expect(settled.outcome.kind).toBe("recorded");
  expect(inbox.announced).toEqual([workspaceId]);
});

test("a token announced in another workspace is no token: FENCED, naming the offer's own", async () => {
  const store = new SuggestionStore(redis);
  const own = uniqueId("ws-own");
  const other = uniqueId("ws-other");
  const { sessionId, suggestionId } = await offerIn(store, own);
  const token = String(await store.inbox.announce(other, sessionId, 1_000));
  expect(await rawDismiss(sessionId, suggestionId, token, other)).toMatchObject({
    workspaceId: own,
  });
  // Nothing was recorded: the offer is still open, in its own workspace's inbox.
  expect((await store.suggestion(sessionId, suggestionId))?.state).toBe(1);
  const page = await store.inbox.page(own, 50, "");
  expect(page.entries.map((e) => e.suggestion.id)).toEqual([suggestionId]);
});
