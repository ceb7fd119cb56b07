import { afterEach, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { startLockKey, workspaceKeys } from "../../server/store/keys.js";
import { grpcClients, putSession, startTestServer, uniqueId } from "../support/harness.js";
import { expectNotOpen, failureOf, logRecords } from "../support/lists.js";
import { useTestHost, useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";
import { gate } from "../support/test-host.js";

// Two instances on one Redis, both using a test host over gRPC that can stall. The lock
// lives 300 ms and is renewed for at most 300 ms, so a holder stuck in CreateChat for
// 2 s loses it after about 400 ms.
const TTL = 300;
const testHost = useTestHost();
const settings = () => ({
  chatHostUrl: testHost.url,
  startLockTtlMs: TTL,
  startLockMaxHoldMs: TTL,
});
const one = useTestServer({ settings });
const two = useTestServer({ settings });
afterEach(() => {
  testHost.hooks.beforeCreateChat = undefined;
  testHost.hooks.afterCreateChat = undefined;
});

async function offered() {
  const sessionId = uniqueId();
  await putSession(testHost.clients, { sessionId });
  const { id } = await offerOne(one.clients, sessionId, "Stalled task");
  return { sessionId, suggestionId: id };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a CreateChat that stalls past the lock's lifetime, with a second Start meanwhile: one chat, one brief", async () => {
  const { sessionId, suggestionId } = await offered();
  const firstCall = gate();
  let calls = 0;
  testHost.hooks.beforeCreateChat = async () => {
    calls++;
    if (calls === 1) {
      firstCall.open();
      await sleep(2_000); // the first holder stalls far past its lock
    }
  };
  const first = one.clients.suggestions.startSuggestion({ sessionId, suggestionId });
  await firstCall.promise;
  const second = await two.clients.suggestions.startSuggestion({ sessionId, suggestionId });
  // The second Start waited for the lock to lapse, took it, and finished first.
  expect(calls).toBe(2);
  const firstAnswer = await first;
  expect(firstAnswer.chatId).toBe(second.chatId);
  expect(firstAnswer.suggestion?.state).toBe(SuggestionState.STARTED);

  // Both asked for the same chat (one idempotency key), so there is one.
  const keys = new Set(testHost.calls.createChat.slice(-2).map((r) => r.idempotencyKey));
  expect(keys.size).toBe(1);
  const { chat } = await testHost.clients.local.getChat({ chatId: second.chatId });
  expect(chat?.messages.map((m) => [m.author, m.text])).toEqual([
    [MessageAuthor.SUGGESTION, "Do the follow-up."],
  ]);
  const settled = (await logRecords(one.redis, sessionId)).filter((r) => r.type === "settled");
  expect(settled).toEqual([expect.objectContaining({ outcome: "started", chat: second.chatId })]);
  expect(await one.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
});

test("dismissed while its chat is being created: stays dismissed, no brief, not-open then and after", async () => {
  const { sessionId, suggestionId } = await offered();
  const created = gate<string>();
  const dismissed = gate();
  testHost.hooks.afterCreateChat = async (_request, response) => {
    created.open(response.chatId);
    await dismissed.promise;
  };
  const start = failureOf(one.clients.suggestions.startSuggestion({ sessionId, suggestionId }));
  const chatId = await created.promise;
  // The person dismisses it, through the other instance, while the chat is being made.
  const { suggestion } = await two.clients.suggestions.dismissSuggestion({
    sessionId,
    suggestionId,
  });
  expect(suggestion?.state).toBe(SuggestionState.DISMISSED);
  dismissed.open();

  expectNotOpen(await start, suggestionId, SuggestionState.DISMISSED);
  const posts = testHost.calls.postMessage.filter((p) => p.chatId === chatId);
  expect(posts).toEqual([]);
  expect((await testHost.clients.local.getChat({ chatId })).chat?.messages).toEqual([]);

  for (const c of [one.clients, two.clients]) {
    expectNotOpen(
      await failureOf(c.suggestions.startSuggestion({ sessionId, suggestionId })),
      suggestionId,
      SuggestionState.DISMISSED,
    );
  }
  const { suggestion: now } = await one.clients.suggestions.getSuggestion({
    sessionId,
    suggestionId,
  });
  expect(now).toMatchObject({ state: SuggestionState.DISMISSED, chatId: "" });
  expect((await logRecords(one.redis, sessionId)).map((r) => r.outcome ?? r.type)).toEqual([
    "offered",
    "starting",
    "dismissed",
  ]);
  expect((await testHost.clients.local.getChat({ chatId })).chat?.messages).toEqual([]);
  expect(await one.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
});

test("callers that wait on a stalled holder answer its chat once it finishes, without taking over", async () => {
  // A holder slower than the lock's lifetime but still renewing it: nobody takes over.
  // The lifetime leaves room for a busy machine's event-loop pauses between renewals.
  const settings = { chatHostUrl: testHost.url, startLockTtlMs: 600, startLockMaxHoldMs: 10_000 };
  const patient = await startTestServer(undefined, settings);
  try {
    const c = grpcClients(patient.url);
    const { sessionId, suggestionId } = await offered();
    const entered = gate();
    let calls = 0;
    testHost.hooks.beforeCreateChat = async () => {
      calls++;
      entered.open();
      await sleep(2_000);
    };
    const first = c.suggestions.startSuggestion({ sessionId, suggestionId });
    await entered.promise;
    const waiters = await Promise.all(
      Array.from({ length: 5 }, () => c.suggestions.startSuggestion({ sessionId, suggestionId })),
    );
    const { chatId } = await first;
    expect(calls).toBe(1);
    expect(new Set(waiters.map((w) => w.chatId))).toEqual(new Set([chatId]));
    expect((await testHost.clients.local.getChat({ chatId })).chat?.messages).toHaveLength(1);
  } finally {
    await patient.close();
  }
});

test("the `started` step's inbox announcement is made while CreateChat is still running", async () => {
  const workspaceId = uniqueId("ws");
  const sessionId = uniqueId();
  await putSession(testHost.clients, { sessionId, workspaceId });
  const { id: suggestionId } = await offerOne(one.clients, sessionId, "Announced early");
  const { chats } = workspaceKeys(workspaceId);
  const offerToken = Number(await one.redis.hget(chats, `t:${sessionId}`));
  expect(offerToken).toBeGreaterThan(0);
  const entered = gate();
  const release = gate();
  testHost.hooks.beforeCreateChat = async () => {
    entered.open();
    await release.promise;
  };
  const start = one.clients.suggestions.startSuggestion({ sessionId, suggestionId });
  await entered.promise;
  // CreateChat is held: the chat's new token comes from the step's own announcement.
  const deadline = Date.now() + 2_000;
  let token = offerToken;
  while (token === offerToken && Date.now() < deadline) {
    await sleep(10);
    token = Number(await one.redis.hget(chats, `t:${sessionId}`));
  }
  expect(token).toBeGreaterThan(offerToken);
  expect((await logRecords(one.redis, sessionId)).map((r) => r.type)).toEqual([
    "offered",
    "starting",
  ]);
  release.open();
  const { chatId, suggestion } = await start;
  expect(suggestion?.state).toBe(SuggestionState.STARTED);
  expect(suggestion?.chatId).toBe(chatId);
  const settled = (await logRecords(one.redis, sessionId)).filter((r) => r.type === "settled");
  expect(settled).toEqual([expect.objectContaining({ outcome: "started", chat: chatId })]);
  const inbox = await one.clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  expect(inbox.suggestions).toEqual([]);
});
