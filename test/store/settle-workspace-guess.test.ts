import { afterAll, expect, test } from "vitest";
import type { InboxToken } from "../../server/store/inbox-token.js";
import { sessionKeys } from "../../server/store/keys.js";
import { runScript } from "../../server/store/run-script.js";
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
  override announcement(workspaceId: string, sessionId: string, minimum = 0) {
    this.announced.push(workspaceId);
    return super.announcement(workspaceId, sessionId, minimum);
  }
}

async function offerIn(store: SuggestionStore, workspaceId: string) {
  const sessionId = uniqueId("guess");
  return { sessionId, suggestionId: await storeOffer(store, sessionId, workspaceId) };
}

/** settle-3.lua called as is: a dismissal with `token`, announced in `workspace`. */
async function rawDismiss(sessionId: string, suggestionId: string, token: string, ws: string) {
  return announcedDismiss(sessionId, suggestionId, { token, workspace: ws });
}

/** settle-3.lua as the store calls it: a dismissal carrying `at`. */
async function announcedDismiss(sessionId: string, suggestionId: string, at: InboxToken) {
  const keys = sessionKeys(sessionId);
  const args = settleArgs(suggestionId, "dismissed", "", at.token, at.workspace);
  return settleOutcome(
    await runScript(redis, "settle", keys.log, keys.projection, keys.changes, ...args),
  );
}

test("an offer this instance has read: one announcement in its workspace, the settle run once", async () => {
  const inbox = new CountingInbox(redis);
  const store = new SuggestionStore(redis, inbox);
  const workspaceId = uniqueId("ws");
  const { sessionId, suggestionId } = await offerIn(store, workspaceId);
  await store.suggestion(sessionId, suggestionId);
  inbox.announced.length = 0;
  const tries: string[] = [];
  const settled = await store.announcedSettle(sessionId, suggestionId, async (at) => {
    tries.push(`${at.workspace}:${at.token === "" ? "none" : "token"}`);
    return announcedDismiss(sessionId, suggestionId, at);
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

test("a withdrawal whose offer is settled between its tries is announced in the workspace of the one it withdraws", async () => {
  // Two open offers titled "T", of two workspaces (the chat moved between them).
  const [w1, w2] = [uniqueId("ws"), uniqueId("ws")];
  const writer = new SuggestionStore(redis);
  const { sessionId, suggestionId: older } = await offerIn(writer, w1);
  const newer = await storeOffer(writer, sessionId, w2);
  expect((await writer.inbox.page(w1, 50, "")).entries).toHaveLength(1);
  expect((await writer.inbox.page(w2, 50, "")).entries).toHaveLength(1);
  // The first try names the newer offer's workspace; while the chat is announced there,
  // the person dismisses that offer, so the retry finds the older one, of the other.
  let raced = false;
  class RacingInbox extends WorkspaceInbox {
    override async announcement(workspaceId: string, session: string, minimum = 0) {
      if (workspaceId === w2 && !raced) {
        raced = true;
        expect((await writer.settle(sessionId, newer, "dismissed")).kind).toBe("recorded");
      }
      return super.announcement(workspaceId, session, minimum);
    }
  }
  const store = new SuggestionStore(redis, new RacingInbox(redis));
  const out = await store.withdraw(sessionId, { title: "T", reason: "Done.", toolCallId: "" });
  expect(raced).toBe(true);
  expect(out.kind === "withdrawn" && out.suggestion.id).toBe(older);
  // Neither inbox lists an offer the log has settled.
  expect((await writer.inbox.page(w1, 50, "")).entries).toEqual([]);
  expect((await writer.inbox.page(w2, 50, "")).entries).toEqual([]);
});
