import { timestampMs } from "@bufbuild/protobuf/wkt";
import { expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { sessionKeys } from "../../server/store/keys.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { putSession, sharedRedisUrl, uniqueId } from "../support/harness.js";
import {
  appendOffers,
  appendRaw,
  expectNotOpen,
  expectOpenLimit,
  failureOf,
  ids,
  logRecords,
  projectionFold,
} from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const t = useTestServer();

async function newSession(): Promise<string> {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  return sessionId;
}

const req = (sessionId: string, suggestionId: string) => ({ sessionId, suggestionId });
const list = (sessionId: string) => t.clients.suggestions.listSuggestions({ sessionId });

test("a session with no log has empty lists", async () => {
  const res = await list(uniqueId());
  expect(res.open).toEqual([]);
  expect(res.settled).toEqual([]);
});

test("open newest first, settled in offer order, a restored offer back in its place", async () => {
  const sessionId = await newSession();
  const a = (await offerOne(t.clients, sessionId, "A")).id;
  const b = (await offerOne(t.clients, sessionId, "B")).id;
  const c = (await offerOne(t.clients, sessionId, "C")).id;
  expect(ids((await list(sessionId)).open)).toEqual([c, b, a]);

  await t.clients.suggestions.dismissSuggestion(req(sessionId, b));
  await t.clients.suggestions.draftSuggestion(req(sessionId, a));
  const d = (await offerOne(t.clients, sessionId, "D")).id;
  let lists = await list(sessionId);
  expect(ids(lists.open)).toEqual([d, c]);
  expect(ids(lists.settled)).toEqual([a, b]);

  // Restored, b is open again between c and d by the time of its offer.
  await t.clients.suggestions.restoreSuggestion(req(sessionId, b));
  lists = await list(sessionId);
  expect(ids(lists.open)).toEqual([d, c, b]);
  expect(ids(lists.settled)).toEqual([a]);

  // Settled in the order d, b, c: listed in offer order all the same.
  await t.clients.suggestions.dismissSuggestion(req(sessionId, d));
  await t.clients.suggestions.dismissSuggestion(req(sessionId, b));
  await t.clients.suggestions.draftSuggestion(req(sessionId, c));
  lists = await list(sessionId);
  expect(ids(lists.open)).toEqual([]);
  expect(ids(lists.settled)).toEqual([a, b, c, d]);

  await t.clients.suggestions.restoreSuggestion(req(sessionId, d));
  await t.clients.suggestions.restoreSuggestion(req(sessionId, b));
  lists = await list(sessionId);
  expect(ids(lists.open)).toEqual([d, b]);
  expect(ids(lists.settled)).toEqual([a, c]);
  expect(lists.settled.map((s) => SuggestionState[s.state])).toEqual(["DRAFTED", "DRAFTED"]);
});

test("each suggestion carries its state, times, turn and chat, as Get answers it too", async () => {
  const sessionId = await newSession();
  const offered = await offerOne(t.clients, sessionId, "Carry");
  const other = await offerOne(t.clients, sessionId, "Other");
  const store = new SuggestionStore(createRedisClient(sharedRedisUrl()));
  await store.settle(sessionId, offered.id, "started", "chat-7");
  store.redis.disconnect();
  const dismissed = await t.clients.suggestions.dismissSuggestion(req(sessionId, other.id));

  const [offerRecord, otherRecord, startRecord, dismissRecord] = await logRecords(
    t.redis,
    sessionId,
  );
  const lists = await list(sessionId);
  const [started, second] = lists.settled;
  expect(started).toMatchObject({
    id: offered.id,
    sessionId,
    turnId: offerRecord?.turn,
    title: "Carry",
    tldr: "Worth doing",
    brief: "Do the follow-up.",
    state: SuggestionState.STARTED,
    chatId: "chat-7",
  });
  expect(started?.offeredAt && timestampMs(started.offeredAt)).toBe(Number(offerRecord?.time));
  expect(started?.settledAt && timestampMs(started.settledAt)).toBe(Number(startRecord?.time));
  expect(second).toEqual(dismissed.suggestion);
  expect(second?.turnId).toBe(otherRecord?.turn);
  expect(second?.settledAt && timestampMs(second.settledAt)).toBe(Number(dismissRecord?.time));
  for (const s of lists.settled) {
    expect((await t.clients.suggestions.getSuggestion(req(sessionId, s.id))).suggestion).toEqual(s);
  }
});

test("records appended straight onto the stream fold as the contract says", async () => {
  const sessionId = await newSession();
  const a = (await offerOne(t.clients, sessionId, "A")).id;
  const b = (await offerOne(t.clients, sessionId, "B")).id;
  await t.clients.suggestions.dismissSuggestion(req(sessionId, b));
  const before = await list(sessionId);

  // A settlement for an unknown id, a started record for a dismissed offer, and a
  // record of a kind the fold does not know: none changes the lists.
  await appendRaw(t.redis, sessionId, { type: "settled", id: "ghost", outcome: "dismissed" });
  await appendRaw(t.redis, sessionId, { type: "settled", id: b, outcome: "started", chat: "c-x" });
  await appendRaw(t.redis, sessionId, { type: "annotation", id: a, note: "another writer" });
  await appendRaw(t.redis, sessionId, { type: "settled", id: a, outcome: "restored" });
  expect(await list(sessionId)).toEqual(before);

  // A title of 500 characters, written under an older, larger limit, still opens.
  const long = "L".repeat(500);
  await appendRaw(t.redis, sessionId, {
    type: "offered",
    id: "old-offer",
    turn: "old-turn",
    title: long,
    tldr: "t",
    brief: "b",
    time: "1600000000000",
  });
  const lists = await list(sessionId);
  expect(ids(lists.open)).toEqual(["old-offer", a]);
  expect(lists.open[0]?.title).toBe(long);
  expect(lists.open[0]?.offeredAt && timestampMs(lists.open[0].offeredAt)).toBe(1600000000000);
  expect(ids(lists.settled)).toEqual([b]);

  // The scripts read the same records: b stays dismissed (not started), the raw offer
  // counts as open, and both can be settled through the RPCs.
  expectNotOpen(
    await failureOf(t.clients.suggestions.draftSuggestion(req(sessionId, b))),
    b,
    SuggestionState.DISMISSED,
  );
  const drafted = await t.clients.suggestions.draftSuggestion(req(sessionId, "old-offer"));
  expect(drafted.suggestion).toMatchObject({ title: long, state: SuggestionState.DRAFTED });
});

test("more than 3 open from an older log still list; a restore then stops at the limit", async () => {
  const sessionId = await newSession();
  const a = (await offerOne(t.clients, sessionId, "A")).id;
  await t.clients.suggestions.dismissSuggestion(req(sessionId, a));
  await appendOffers(t.redis, sessionId, "x1", "x2", "x3", "x4");
  expect(ids((await list(sessionId)).open)).toEqual(["x4", "x3", "x2", "x1"]);
  expectOpenLimit(await failureOf(t.clients.suggestions.restoreSuggestion(req(sessionId, a))));
});

test("deleting the projection gives the same answers, rebuilt from the stream", async () => {
  const sessionId = await newSession();
  const offers: string[] = [];
  for (let i = 0; i < 4; i++) {
    offers.push((await offerOne(t.clients, sessionId, `P${i}`)).id);
    if (i === 1) await t.clients.suggestions.dismissSuggestion(req(sessionId, offers[0] as string));
  }
  const [p0, p1, , p3] = offers as [string, string, string, string];
  await t.clients.suggestions.draftSuggestion(req(sessionId, p1));
  await t.clients.suggestions.restoreSuggestion(req(sessionId, p0));
  await t.clients.suggestions.dismissSuggestion(req(sessionId, p3));
  const proj = sessionKeys(sessionId).projection;
  const cached = await projectionFold(t.redis, sessionId);
  const lists = await list(sessionId);

  await t.redis.del(proj);
  expect(await list(sessionId)).toEqual(lists);
  // The next script rebuilds the same projection, and decides the same way.
  expectNotOpen(
    await failureOf(t.clients.suggestions.dismissSuggestion(req(sessionId, p1))),
    p1,
    SuggestionState.DRAFTED,
  );
  expect(await projectionFold(t.redis, sessionId)).toEqual(cached);

  await t.redis.del(proj);
  const offered = await offerOne(t.clients, sessionId, "P4");
  expect(offered.state).toBe(SuggestionState.OPEN);
  await t.redis.del(proj);
  expectOpenLimit(await failureOf(t.clients.suggestions.restoreSuggestion(req(sessionId, p3))));
  await t.redis.del(proj);
  const again = await t.clients.suggestions.dismissSuggestion(req(sessionId, p3));
  expect(again.suggestion?.state).toBe(SuggestionState.DISMISSED);
  expect((await logRecords(t.redis, sessionId)).filter((r) => r.id === p3)).toHaveLength(2);
});
