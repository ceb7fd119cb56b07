import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { startLockKey } from "../../server/store/keys.js";
import {
  type Clients,
  grpcClients,
  putSession,
  type ServiceProcess,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { logRecords } from "../support/lists.js";
import { useTestHost, useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";
import { gate } from "../support/test-host.js";

// A service process that a test kills with kill -9 at a chosen moment: its chat host is
// a test host that holds the call the process is waiting on until the test has killed
// it, and then drops it. The later Start goes to another instance on the same Redis.
const testHost = useTestHost();
const survivor = useTestServer({
  settings: () => ({ chatHostUrl: testHost.url, startLockTtlMs: 500 }),
});
let victim: ServiceProcess | undefined;
afterEach(async () => {
  testHost.hooks.afterCreateChat = undefined;
  testHost.hooks.beforePostMessage = undefined;
  await victim?.kill();
  victim = undefined;
});

/** A service process on the shared Redis whose chat host is the test host. */
async function spawnVictim(env: Record<string, string> = { START_LOCK_TTL_MS: "500" }) {
  victim = await spawnService(sharedRedisUrl(), { CHAT_HOST_URL: testHost.url, ...env });
  return grpcClients(victim.url);
}

/** A call the host drops after the caller died: the caller never learns of it. */
const dropped = () => new ConnectError("the caller is gone", Code.Unavailable);

async function offered(c: Clients) {
  const sessionId = uniqueId();
  await putSession(testHost.clients, { sessionId });
  const { id } = await offerOne(c, sessionId, "Survive the crash");
  return { sessionId, suggestionId: id };
}

/**
 * Starts the offer on the victim and kill -9s it once the host made the chat, before
 * the victim heard back; answers the chat.
 */
async function killedAfterCreateChat(
  c: Clients,
  sessionId: string,
  suggestionId: string,
): Promise<string> {
  const created = gate<string>();
  const killed = gate();
  testHost.hooks.afterCreateChat = async (_request, response) => {
    created.open(response.chatId);
    await killed.promise;
    throw dropped();
  };
  const doomed = c.suggestions.startSuggestion({ sessionId, suggestionId }).catch((e) => e);
  const chatId = await created.promise;
  expect(await victim?.kill("SIGKILL")).toBe("SIGKILL");
  killed.open();
  testHost.hooks.afterCreateChat = undefined;
  expect(await doomed).toBeInstanceOf(ConnectError);
  return chatId;
}

test("killed after the chat was created, before started was recorded: a later Start answers that chat, brief once", async () => {
  const c = await spawnVictim();
  const { sessionId, suggestionId } = await offered(c);
  const chatId = await killedAfterCreateChat(c, sessionId, suggestionId);

  // What the crash left: a chat without a brief, an open offer (with the options its first
  // Start fixed, the `starting` record), the dead holder's lock.
  expect((await testHost.clients.local.getChat({ chatId })).chat?.messages).toEqual([]);
  expect((await logRecords(survivor.redis, sessionId)).map((r) => r.type)).toEqual([
    "offered",
    "starting",
  ]);
  expect(await survivor.redis.exists(startLockKey(sessionId, suggestionId))).toBe(1);

  // The later Start waits out the dead holder's lock, then finishes on the same chat.
  const res = await survivor.clients.suggestions.startSuggestion({ sessionId, suggestionId });
  expect(res.chatId).toBe(chatId);
  expect(res.suggestion?.state).toBe(SuggestionState.STARTED);
  const again = await survivor.clients.suggestions.startSuggestion({ sessionId, suggestionId });
  expect(again.chatId).toBe(chatId);
  const { chat } = await testHost.clients.local.getChat({ chatId });
  expect(chat?.messages.map((m) => [m.author, m.text])).toEqual([
    [MessageAuthor.SUGGESTION, "Do the follow-up."],
  ]);
  const settled = (await logRecords(survivor.redis, sessionId)).filter((r) => r.type === "settled");
  expect(settled).toEqual([expect.objectContaining({ outcome: "started", chat: chatId })]);
});

test("killed after started was recorded, before the brief was posted: a later Start answers that chat and posts the brief once", async () => {
  const c = await spawnVictim();
  const { sessionId, suggestionId } = await offered(c);
  const posting = gate<string>();
  const killed = gate();
  testHost.hooks.beforePostMessage = async (request) => {
    posting.open(request.chatId);
    await killed.promise;
    throw dropped();
  };
  const doomed = c.suggestions.startSuggestion({ sessionId, suggestionId }).catch((e) => e);
  const chatId = await posting.promise;
  expect(await victim?.kill("SIGKILL")).toBe("SIGKILL");
  killed.open();
  testHost.hooks.beforePostMessage = undefined;
  expect(await doomed).toBeInstanceOf(ConnectError);

  // What the crash left: started recorded with the chat, the chat without its brief.
  const settled = (await logRecords(survivor.redis, sessionId)).filter((r) => r.type === "settled");
  expect(settled).toEqual([expect.objectContaining({ outcome: "started", chat: chatId })]);
  expect((await testHost.clients.local.getChat({ chatId })).chat?.messages).toEqual([]);

  const answers = await Promise.all(
    Array.from({ length: 3 }, () =>
      survivor.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
    ),
  );
  expect(new Set(answers.map((r) => r.chatId))).toEqual(new Set([chatId]));
  const { chat } = await testHost.clients.local.getChat({ chatId });
  expect(chat?.messages.map((m) => [m.author, m.text])).toEqual([
    [MessageAuthor.SUGGESTION, "Do the follow-up."],
  ]);
  expect(chat?.messages[0]?.origin).toMatchObject({ sessionId, suggestionId });
});

test("with the default lock lifetime, a holder killed mid-Start stops blocking within about two seconds, one chat", async () => {
  const c = await spawnVictim({});
  const { sessionId, suggestionId } = await offered(c);
  const chatId = await killedAfterCreateChat(c, sessionId, suggestionId);
  const killedAt = Date.now();
  expect(await survivor.redis.exists(startLockKey(sessionId, suggestionId))).toBe(1);

  const res = await survivor.clients.suggestions.startSuggestion({ sessionId, suggestionId });
  const waitedMs = Date.now() - killedAt;
  expect(res.chatId).toBe(chatId);
  expect(waitedMs).toBeLessThan(3_000);
  const { chat } = await testHost.clients.local.getChat({ chatId });
  expect(chat?.messages.map((m) => m.text)).toEqual(["Do the follow-up."]);
});
