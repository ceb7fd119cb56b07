import { Code, ConnectError } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { WatchSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestionLists } from "../../server/domain/fold.js";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { PubSub } from "../../server/store/pubsub.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { WatchHub } from "../../server/store/watch-hub.js";
import {
  channelSubscribers,
  eventually,
  grpcClients,
  putSession,
  sharedRedisUrl,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { appendOffers, ids, watch } from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const t = useTestServer();

const req = (sessionId: string, suggestionId: string) => ({ sessionId, suggestionId });
const openIds = (m: WatchSuggestionsResponse) => ids(m.open).join(",");
const settledIds = (m: WatchSuggestionsResponse) => ids(m.settled).join(",");

/** Subscribers of a session's channel on Redis: the hub holds one per watched session. */
async function subscribers(sessionId: string): Promise<number> {
  return channelSubscribers(t.redis, sessionKeys(sessionId).changes);
}

test("the lists at once, then the new lists after every change", async () => {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const a = (await offerOne(t.clients, sessionId, "A")).id;
  const w = watch(t.clients, sessionId);
  const first = await w.waitFor(() => true);
  expect(first).toEqual({
    ...(await t.clients.suggestions.listSuggestions({ sessionId })),
    $typeName: first.$typeName,
    heartbeat: false,
  });
  expect(openIds(first)).toBe(a);

  const b = (await offerOne(t.clients, sessionId, "B")).id;
  await w.waitFor((m) => openIds(m) === `${b},${a}`);
  await t.clients.suggestions.dismissSuggestion(req(sessionId, a));
  const dismissed = await w.waitFor((m) => settledIds(m) === a);
  expect(dismissed.settled[0]?.state).toBe(SuggestionState.DISMISSED);
  expect(openIds(dismissed)).toBe(b);
  const beforeRestore = w.messages.length;
  await t.clients.suggestions.restoreSuggestion(req(sessionId, a));
  const restored = await w.waitFor((m) => openIds(m) === `${b},${a}`, beforeRestore);
  expect(restored.settled).toEqual([]);
  await t.clients.suggestions.draftSuggestion(req(sessionId, b));
  const drafted = await w.waitFor((m) => m.settled[0]?.state === SuggestionState.DRAFTED);
  expect(drafted).toEqual({
    ...(await t.clients.suggestions.listSuggestions({ sessionId })),
    $typeName: drafted.$typeName,
    heartbeat: false,
  });
  w.cancel();
  await w.ended;
});

test("a session that never offered anything is watched from empty lists", async () => {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const w = watch(t.clients, sessionId);
  const first = await w.waitFor(() => true);
  expect(first.open).toEqual([]);
  expect(first.settled).toEqual([]);
  const a = (await offerOne(t.clients, sessionId, "A")).id;
  await w.waitFor((m) => openIds(m) === a);
  w.cancel();
  await w.ended;
});

test("a settlement that records nothing sends nothing; a burst ends on the final lists", async () => {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const [a, b] = [
    (await offerOne(t.clients, sessionId)).id,
    (await offerOne(t.clients, sessionId)).id,
  ];
  await t.clients.suggestions.dismissSuggestion(req(sessionId, a));
  const w = watch(t.clients, sessionId);
  await w.waitFor((m) => settledIds(m) === a);
  const seen = w.messages.length;
  await t.clients.suggestions.dismissSuggestion(req(sessionId, a)); // already dismissed
  await t.clients.suggestions.restoreSuggestion(req(sessionId, b)); // already open
  await t.clients.suggestions.draftSuggestion(req(sessionId, b));
  const next = await w.waitFor(() => true, seen);
  expect(settledIds(next)).toBe(`${a},${b}`);
  expect(w.messages.length).toBe(seen + 1);

  const burst: Promise<unknown>[] = [];
  for (let i = 0; i < 10; i++) {
    burst.push(t.clients.suggestions.restoreSuggestion(req(sessionId, a)));
    burst.push(t.clients.suggestions.dismissSuggestion(req(sessionId, a)));
  }
  await Promise.allSettled(burst);
  const final = await t.clients.suggestions.listSuggestions({ sessionId });
  await w.waitFor(
    (m) =>
      openIds(m) === ids(final.open).join(",") && settledIds(m) === ids(final.settled).join(","),
    seen + 1,
  );
  await new Promise((r) => setTimeout(r, 100));
  const last = w.messages.at(-1);
  expect(last?.open).toEqual(final.open);
  expect(last?.settled).toEqual(final.settled);
  w.cancel();
  await w.ended;
});

test("a client that leaves ends its watch; the channel is left when the last one goes", async () => {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const one = watch(t.clients, sessionId);
  const two = watch(t.clients, sessionId);
  await Promise.all([one.waitFor(() => true), two.waitFor(() => true)]);
  expect(await subscribers(sessionId)).toBe(1);

  one.cancel();
  const err = await one.ended;
  expect(err instanceof ConnectError && err.code).toBe(Code.Canceled);
  const a = (await offerOne(t.clients, sessionId)).id;
  await two.waitFor((m) => openIds(m) === a);
  expect(await subscribers(sessionId)).toBe(1);

  two.cancel();
  await two.ended;
  await eventually(async () => (await subscribers(sessionId)) === 0);
});

test("shutdown ends every watch promptly, UNAVAILABLE saying why (never OK)", async () => {
  const own = await startTestServer();
  const ownClients = grpcClients(own.url);
  const sessionId = uniqueId();
  await putSession(ownClients, { sessionId });
  const watchers = [watch(ownClients, sessionId), watch(ownClients, uniqueId())];
  await Promise.all(watchers.map((w) => w.waitFor(() => true)));
  const started = Date.now();
  await own.close();
  expect(Date.now() - started).toBeLessThan(1_500);
  for (const w of watchers) {
    const ended = ConnectError.from(await w.ended);
    expect([Code[ended.code], ended.rawMessage]).toEqual([
      "Unavailable",
      "the server is shutting down",
    ]);
  }
  expect(await subscribers(sessionId)).toBe(0);
});

test("the hub reads a session's lists once for all its watchers and coalesces a burst", async () => {
  class CountingStore extends SuggestionStore {
    reads = 0;
    override snapshot(sessionId: string) {
      this.reads++;
      return super.snapshot(sessionId);
    }
  }
  const client = createRedisClient(sharedRedisUrl());
  const store = new CountingStore(client);
  const pubsub = new PubSub(() => subscriberConnection(client));
  const hub = new WatchHub(store, pubsub);
  const sessionId = uniqueId();
  const offerIds = ["offer-0", "offer-1", "offer-2"];
  await appendOffers(t.redis, sessionId, ...offerIds);
  // One signal per watcher, as each call has its own in the service.
  const aborts = Array.from({ length: 100 }, () => new AbortController());
  const latest: SuggestionLists[] = [];
  const done = aborts.map(async (abort, i) => {
    for await (const lists of hub.watch(sessionId, abort.signal)) latest[i] = lists;
  });
  await eventually(async () => latest.filter(Boolean).length === 100);
  expect(store.reads).toBeLessThanOrEqual(2);
  expect(hub.watchedSessions).toBe(1);

  const readsBefore = store.reads;
  await Promise.all(
    offerIds.flatMap((id) => [
      store.settle(sessionId, id, "dismissed"),
      store.settle(sessionId, id, "restored"),
    ]),
  );
  await Promise.all(offerIds.map((id) => store.settle(sessionId, id, "drafted")));
  await eventually(async () => latest.every((l) => l.settled.length === 3));
  // 6 to 9 changes were published; far fewer reads served all 100 watchers.
  expect(store.reads - readsBefore).toBeLessThanOrEqual(4);
  const final = await store.lists(sessionId);
  for (const lists of latest) expect(lists.settled).toEqual(final.settled);

  for (const abort of aborts) abort.abort();
  await Promise.all(done);
  expect(hub.watchedSessions).toBe(0);
  expect(pubsub.channels).toBe(0);
  await hub.close();
  await pubsub.close();
  client.disconnect();
});

test("a watch ends as its reader or the store ends it: a failed read, an early break, the hub closing", async () => {
  class FailingStore extends SuggestionStore {
    failNext = false;
    override snapshot(sessionId: string) {
      if (this.failNext) {
        this.failNext = false;
        return Promise.reject(new Error("Redis is gone"));
      }
      return super.snapshot(sessionId);
    }
  }
  const client = createRedisClient(sharedRedisUrl());
  const store = new FailingStore(client);
  const pubsub = new PubSub(() => subscriberConnection(client));
  const hub = new WatchHub(store, pubsub);
  const sessionId = uniqueId();
  await appendOffers(t.redis, sessionId, "a");

  // A read that fails after the first lists: the reader gets the error, the channel is left.
  const failing = hub.watch(sessionId, new AbortController().signal);
  const first = await failing.next();
  expect(first.done === false && ids(first.value.open)).toEqual(["a"]);
  expect(hub.watchedSessions).toBe(1);
  store.failNext = true;
  const failed = failing.next();
  await store.settle(sessionId, "a", "dismissed");
  await expect(failed).rejects.toThrow("Redis is gone");
  expect(hub.watchedSessions).toBe(0);
  await eventually(async () => (await subscribers(sessionId)) === 0);

  // A reader that leaves its loop early leaves the channel.
  for await (const lists of hub.watch(sessionId, new AbortController().signal)) {
    expect(ids(lists.settled)).toEqual(["a"]);
    break;
  }
  expect(hub.watchedSessions).toBe(0);

  // A watch of an aborted signal ends at once; the hub closing fails a waiting one
  // UNAVAILABLE (the server shuts down: the client is to watch again elsewhere).
  const aborted = new AbortController();
  aborted.abort();
  expect(await hub.watch(sessionId, aborted.signal).next()).toEqual({
    value: undefined,
    done: true,
  });
  const waiting = hub.watch(sessionId, new AbortController().signal);
  await waiting.next();
  const ended = waiting.next();
  const endedError = ended.then(
    () => undefined,
    (err: unknown) => err,
  );
  await hub.close();
  const closedError = ConnectError.from(await endedError);
  expect([closedError.code, closedError.rawMessage]).toEqual([
    Code.Unavailable,
    "the server is shutting down",
  ]);
  expect(hub.watchedSessions).toBe(0);
  // And a closed hub refuses new watches.
  await expect(hub.watch(sessionId, new AbortController().signal).next()).rejects.toThrow(
    "the server is shutting down",
  );
  await pubsub.close();
  client.disconnect();
});
