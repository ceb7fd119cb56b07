import { Redis } from "ioredis";
import { afterAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { WatchSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import {
  type Clients,
  eventually,
  grpcClients,
  ownRedis,
  putSession,
  type ServiceProcess,
  sharedRedisUrl,
  spawnService,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { ids, type WatchCapture, watch } from "../support/lists.js";
import { offerOne } from "../support/suggest.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const settledIds = (m: WatchSuggestionsResponse) => ids(m.settled).join(",");

test("1,000 idle watchers on one server hold a bounded number of Redis connections", async () => {
  const redisServer = await ownRedis();
  cleanups.push(
    () => redisServer.remove(),
    () => redisServer.kill(),
  );
  const server = await startTestServer(redisServer.url);
  cleanups.push(() => server.close());
  const admin = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
  cleanups.push(() => admin.disconnect());
  const clientCount = async () =>
    String(await admin.client("LIST"))
      .trim()
      .split("\n").length;

  // Four HTTP/2 connections, 250 streams each (the server allows 1,000 per connection).
  const transports = Array.from({ length: 4 }, () => grpcClients(server.url));
  const sessions = Array.from({ length: 20 }, () => uniqueId());
  const offers = new Map<string, string>();
  for (const sessionId of sessions) {
    await putSession(transports[0] as Clients, { sessionId });
    const s = await offerOne(transports[0] as Clients, sessionId);
    offers.set(sessionId, s.id);
  }

  const one = watch(transports[0] as Clients, sessions[0] as string);
  await one.waitFor(() => true);
  const withOne = await clientCount();

  const watchers: { sessionId: string; capture: WatchCapture }[] = [];
  for (let i = 0; i < 1_000; i++) {
    const sessionId = sessions[i % sessions.length] as string;
    const clients = transports[i % transports.length] as Clients;
    watchers.push({ sessionId, capture: watch(clients, sessionId) });
  }
  await Promise.all(watchers.map((w) => w.capture.waitFor(() => true, 0, 20_000)));
  const withThousand = await clientCount();
  expect(withThousand).toBe(withOne);
  // This test's own client, the server's client and its subscriber, and at most two more
  // the server may hold for other purposes: never one per watcher.
  expect(withThousand).toBeLessThanOrEqual(5);
  const channels = (await admin.pubsub("SHARDCHANNELS", "suggest:*")) as string[];
  expect(channels).toHaveLength(sessions.length);
  const numsub = (await admin.pubsub("SHARDNUMSUB", ...channels)) as (string | number)[];
  for (let i = 1; i < numsub.length; i += 2) expect(Number(numsub[i])).toBe(1);

  // A change reaches each of the 50 watchers of its session.
  const target = sessions[3] as string;
  const targetOffer = offers.get(target) as string;
  await (transports[1] as Clients).suggestions.dismissSuggestion({
    sessionId: target,
    suggestionId: targetOffer,
  });
  const ofTarget = watchers.filter((w) => w.sessionId === target);
  expect(ofTarget).toHaveLength(50);
  await Promise.all(ofTarget.map((w) => w.capture.waitFor((m) => settledIds(m) === targetOffer)));
  // The others were not told anything new.
  for (const w of watchers) if (w.sessionId !== target) expect(w.capture.messages).toHaveLength(1);

  for (const w of [...watchers, { sessionId: "", capture: one }]) w.capture.cancel();
  await Promise.all(watchers.map((w) => w.capture.ended));
  await eventually(
    async () => ((await admin.pubsub("SHARDCHANNELS", "suggest:*")) as string[]).length === 0,
  );
  expect(await clientCount()).toBe(withOne);
}, 60_000);

test("two server processes on one Redis: a dismissal through one reaches a watcher on the other within a second", async () => {
  const redisUrl = sharedRedisUrl();
  const [a, b] = await Promise.all([spawnService(redisUrl), spawnService(redisUrl)]);
  const processes: ServiceProcess[] = [a, b];
  cleanups.push(() => Promise.all(processes.map((p) => p.kill("SIGTERM"))));
  const viaA = grpcClients(a.url);
  const viaB = grpcClients(b.url);
  const sessionId = uniqueId();
  await putSession(viaA, { sessionId });
  const first = (await offerOne(viaA, sessionId, "First")).id;
  const second = (await offerOne(viaB, sessionId, "Second")).id;

  const onB = watch(viaB, sessionId);
  const onA = watch(viaA, sessionId);
  await Promise.all([onB.waitFor(() => true), onA.waitFor(() => true)]);

  let started = Date.now();
  await viaA.suggestions.dismissSuggestion({ sessionId, suggestionId: first });
  const seenOnB = await onB.waitFor((m) => settledIds(m) === first, 0, 1_000);
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(seenOnB.settled[0]?.state).toBe(SuggestionState.DISMISSED);
  expect(ids(seenOnB.open)).toEqual([second]);

  started = Date.now();
  await viaB.suggestions.restoreSuggestion({ sessionId, suggestionId: first });
  const seenOnA = await onA.waitFor(
    (m) => ids(m.open).join(",") === `${second},${first}`,
    1,
    1_000,
  );
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(seenOnA.settled).toEqual([]);

  onA.cancel();
  onB.cancel();
  await Promise.all([onA.ended, onB.ended]);
}, 60_000);
