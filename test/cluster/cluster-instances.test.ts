import { afterAll, beforeAll, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { parseRedisUrl } from "../../server/redis/redis-url.js";
import {
  type Clients,
  grpcClients,
  putSession,
  redisClient,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { ids, logRecords, watch } from "../support/lists.js";
import { keysOf, offerOne } from "../support/suggest.js";

// Three service processes, each on the suite's 3-primary Redis Cluster with the
// embedded host there too: any instance may serve any call of any session.
let services: Awaited<ReturnType<typeof spawnService>>[] = [];
let clients: Clients[] = [];
let redis: RedisClient;
beforeAll(async () => {
  const url = sharedRedisUrl();
  expect(parseRedisUrl(url).kind).toBe("cluster");
  services = await Promise.all([spawnService(url), spawnService(url), spawnService(url)]);
  for (const s of services) expect(s.output()).toContain("Redis Cluster at redis+cluster://");
  clients = services.map((s) => grpcClients(s.url));
  redis = redisClient();
});
afterAll(async () => {
  redis?.disconnect();
  await Promise.all(services.map((s) => s.kill("SIGTERM")));
});

test("50 concurrent Starts over three instances on the cluster create one chat with one brief", async () => {
  const sessionId = uniqueId();
  await putSession(clients[0] as Clients, { sessionId });
  const offer = await offerOne(clients[1] as Clients, sessionId, "Port the tests");
  const started = Date.now();

  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      (clients[i % 3] as Clients).suggestions.startSuggestion({
        sessionId,
        suggestionId: offer.id,
      }),
    ),
  );
  const elapsed = Date.now() - started;

  const chatIds = new Set(answers.map((r) => r.chatId));
  expect(chatIds.size).toBe(1);
  const [chatId] = chatIds as Set<string>;
  for (const r of answers) {
    expect(r.suggestion).toMatchObject({ id: offer.id, state: SuggestionState.STARTED, chatId });
  }
  // Every instance sees the one chat, with the brief posted once.
  for (const c of clients) {
    const { chat } = await c.local.getChat({ chatId });
    expect(chat?.messages.map((m) => [m.author, m.text])).toEqual([
      [MessageAuthor.SUGGESTION, "Do the follow-up."],
    ]);
  }
  const settled = (await logRecords(redis, sessionId)).filter((r) => r.type === "settled");
  expect(settled).toEqual([expect.objectContaining({ outcome: "started", chat: chatId })]);
  expect((await keysOf(redis, sessionId)).filter((k) => k.includes(":start:"))).toEqual([]);
  // The callers on other instances that found the lock taken heard the holder's result
  // through the cluster's pub/sub; none sat out the lock's 10 s lifetime.
  expect(elapsed).toBeLessThan(8_000);
});

test("a dismissal through one instance reaches watchers on the other two within a second", async () => {
  const [a, b, c] = clients as [Clients, Clients, Clients];
  const sessionId = uniqueId();
  await putSession(a, { sessionId });
  const first = (await offerOne(a, sessionId, "First")).id;
  const second = (await offerOne(b, sessionId, "Second")).id;

  const onB = watch(b, sessionId);
  const onC = watch(c, sessionId);
  await Promise.all([onB.waitFor(() => true), onC.waitFor(() => true)]);

  const started = Date.now();
  await a.suggestions.dismissSuggestion({ sessionId, suggestionId: first });
  const seen = await Promise.all(
    [onB, onC].map((w) => w.waitFor((m) => ids(m.settled).join(",") === first, 0, 1_000)),
  );
  expect(Date.now() - started).toBeLessThan(1_000);
  for (const m of seen) {
    expect(m.settled[0]?.state).toBe(SuggestionState.DISMISSED);
    expect(ids(m.open)).toEqual([second]);
  }

  // And back: a restore through the third reaches the first two.
  const onA = watch(a, sessionId);
  await onA.waitFor((m) => ids(m.settled).join(",") === first);
  const from = onB.messages.length;
  const again = Date.now();
  await c.suggestions.restoreSuggestion({ sessionId, suggestionId: first });
  await Promise.all([
    onA.waitFor((m) => ids(m.open).join(",") === `${second},${first}`, 0, 1_000),
    onB.waitFor((m) => ids(m.open).join(",") === `${second},${first}`, from, 1_000),
  ]);
  expect(Date.now() - again).toBeLessThan(1_000);

  for (const w of [onA, onB, onC]) w.cancel();
  await Promise.all([onA.ended, onB.ended, onC.ended]);
});
