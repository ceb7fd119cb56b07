import { toBinary } from "@bufbuild/protobuf";
import { afterAll, describe, expect, test } from "vitest";
import { FolderKind, type Session, SessionSchema } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { EmbeddedChatHost } from "../../server/host/embedded-host.js";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import {
  hostKeys,
  sessionKeys,
  startLockKey,
  startResultChannel,
} from "../../server/store/keys.js";
import { runScript } from "../../server/store/run-script.js";
import { settleArgs } from "../../server/store/script-replies.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { eventually, redisClient, uniqueId } from "../support/harness.js";
import { storeOffer } from "../support/suggest.js";

/*
 * StartSuggestion's two steps on the session's slot (lua/beginStart-4.lua,
 * lua/settleStart-5.lua), through store/start-steps.ts, on the suite's redis-server:
 * every result of each script's header, and what it left in Redis.
 */

const redis = redisClient();
const store = new SuggestionStore(redis);
const host = new EmbeddedChatHost(redis);
afterAll(() => redis.quit());

/** A session the embedded host knows, with one open offer (of `workspaceId`, if any). */
async function chatWithOffer(workspaceId = "") {
  const sessionId = uniqueId("lua-start");
  const { session } = await host.putSession({
    sessionId,
    workspaceId: "ws-start",
    folder: FolderKind.NORMAL,
  });
  const suggestionId = await storeOffer(store, sessionId, workspaceId);
  return { sessionId, suggestionId, session, lock: startLockKey(sessionId, suggestionId) };
}

const LOCK = { token: "tok-1", ttlMs: 10_000 };

describe("beginStart-4.lua", () => {
  test("an open offer: the suggestion, the lock taken with the token, the host's session record", async () => {
    const c = await chatWithOffer();
    const begun = await store.start.begin(c.sessionId, c.suggestionId, LOCK, true);
    expect(begun.taken).toBe(true);
    expect(begun.suggestion?.state).toBe(SuggestionState.OPEN);
    expect(begun.suggestion?.id).toBe(c.suggestionId);
    expect(begun.sessionRecord).toEqual(Buffer.from(toBinary(SessionSchema, c.session as Session)));
    expect(await redis.get(c.lock)).toBe("tok-1");
    expect(await redis.pttl(c.lock)).toBeGreaterThan(9_000);
  });

  test("the lock held by another: not taken, and left as it was", async () => {
    const c = await chatWithOffer();
    await redis.set(c.lock, "other", "PX", 10_000);
    const begun = await store.start.begin(c.sessionId, c.suggestionId, LOCK, false);
    expect(begun).toMatchObject({ taken: false, sessionRecord: undefined });
    expect(begun.suggestion?.state).toBe(SuggestionState.OPEN);
    expect(await redis.get(c.lock)).toBe("other");
  });

  test("an offer not open, or none: no lock is taken", async () => {
    const c = await chatWithOffer();
    await store.settle(c.sessionId, c.suggestionId, "dismissed");
    const dismissed = await store.start.begin(c.sessionId, c.suggestionId, LOCK, true);
    expect(dismissed.taken).toBe(false);
    expect(dismissed.suggestion?.state).toBe(SuggestionState.DISMISSED);
    const none = await store.start.begin(c.sessionId, "no-such-offer", LOCK, true);
    expect(none).toMatchObject({ taken: false, suggestion: undefined });
    expect(await redis.exists(c.lock, startLockKey(c.sessionId, "no-such-offer"))).toBe(0);
  });

  test("a session the host does not know: its record is null", async () => {
    const c = await chatWithOffer();
    await redis.del(hostKeys(c.sessionId).session);
    const begun = await store.start.begin(c.sessionId, c.suggestionId, LOCK, true);
    expect(begun.sessionRecord).toBeNull();
  });
});

/** Subscribes to the session's start results; answers what it hears and a close. */
async function listen(sessionId: string) {
  const sub = subscriberConnection(redis);
  const messages: string[] = [];
  sub.on("smessage", (_channel: string, message: string) => messages.push(message));
  await sub.ssubscribe(startResultChannel(sessionId));
  return { messages, close: () => sub.quit() };
}

describe("settleStart-5.lua", () => {
  test("started recorded, the read shows it, the holder's lock released with `released`", async () => {
    const c = await chatWithOffer();
    await redis.set(c.lock, "tok-1", "PX", 10_000);
    const l = await listen(c.sessionId);
    try {
      const settled = await store.start.settle(c.sessionId, c.suggestionId, "chat-1", "tok-1");
      expect(settled.outcome.kind).toBe("recorded");
      expect(settled.suggestion).toMatchObject({
        state: SuggestionState.STARTED,
        chatId: "chat-1",
      });
      expect(await redis.exists(c.lock)).toBe(0);
      await eventually(async () => l.messages.length > 0);
      expect(l.messages).toEqual([`${c.suggestionId} released`]);
    } finally {
      await l.close();
    }
  });

  test("another's lock is left alone; a not-open offer still ends the caller's lock", async () => {
    const c = await chatWithOffer();
    await redis.set(c.lock, "other", "PX", 10_000);
    const first = await store.start.settle(c.sessionId, c.suggestionId, "chat-1", "tok-1");
    expect(first.outcome.kind).toBe("recorded");
    expect(await redis.get(c.lock)).toBe("other");
    const d = await chatWithOffer();
    await store.settle(d.sessionId, d.suggestionId, "dismissed");
    await redis.set(d.lock, "tok-1", "PX", 10_000);
    const late = await store.start.settle(d.sessionId, d.suggestionId, "chat-2", "tok-1");
    expect(late.outcome).toMatchObject({ kind: "not-open", state: SuggestionState.DISMISSED });
    expect(await redis.exists(d.lock)).toBe(0);
  });

  test("an offer of a workspace: FENCED without a token keeps the lock; StartSteps.settle announces and runs", async () => {
    const c = await chatWithOffer("ws-start");
    await redis.set(c.lock, "tok-1", "PX", 10_000);
    const keys = sessionKeys(c.sessionId);
    const raw = await runScript(
      redis,
      "settleStart",
      keys.log,
      keys.projection,
      keys.changes,
      c.lock,
      startResultChannel(c.sessionId),
      ...settleArgs(c.suggestionId, "started", "chat-1", ""),
      "tok-1",
      `${c.suggestionId} released`,
    );
    expect([raw[0][0], raw[0][4], raw[2]]).toEqual([5, "ws-start", -1]);
    expect(await redis.get(c.lock)).toBe("tok-1");
    const settled = await store.start.settle(c.sessionId, c.suggestionId, "chat-1", "tok-1");
    expect(settled.outcome.kind).toBe("recorded");
    expect(await redis.exists(c.lock)).toBe(0);
  });
});
