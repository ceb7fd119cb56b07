import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { Settler, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { putSession, sharedRedisUrl, uniqueId } from "../support/harness.js";
import {
  expectNotFound,
  expectNotOpen,
  expectOpenLimit,
  failureOf,
  ids,
  logRecords,
} from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const t = useTestServer();
const other = useTestServer();

/** A session with `n` offers made through the tool; answers the session and the offer ids. */
async function session(n: number) {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const offers: string[] = [];
  for (let i = 0; i < n; i++) offers.push((await offerOne(t.clients, sessionId, `Task ${i}`)).id);
  return { sessionId, offers };
}

const req = (sessionId: string, suggestionId: string) => ({ sessionId, suggestionId });

describe("draft", () => {
  test("an open suggestion becomes drafted; a repeat answers it as it is and records nothing", async () => {
    const { sessionId, offers } = await session(1);
    const id = offers[0] as string;
    const { suggestion } = await t.clients.suggestions.draftSuggestion(req(sessionId, id));
    expect(suggestion).toMatchObject({
      id,
      sessionId,
      state: SuggestionState.DRAFTED,
      chatId: "",
      settledBy: Settler.PERSON,
    });
    expect(suggestion?.settledAt).toBeDefined();
    const log = await logRecords(t.redis, sessionId);
    expect(log).toHaveLength(2);
    expect(log[1]).toEqual({
      type: "settled",
      id,
      outcome: "drafted",
      by: "person",
      time: expect.any(String),
    });
    expect(suggestion?.settledAt && timestampMs(suggestion.settledAt)).toBe(Number(log[1]?.time));

    const again = await t.clients.suggestions.draftSuggestion(req(sessionId, id));
    expect(again.suggestion).toEqual(suggestion);
    expect((await t.clients.suggestions.getSuggestion(req(sessionId, id))).suggestion).toEqual(
      suggestion,
    );
    expect(await logRecords(t.redis, sessionId)).toHaveLength(2);
  });

  test("a drafted suggestion cannot be dismissed or restored", async () => {
    const { sessionId, offers } = await session(1);
    const id = offers[0] as string;
    await t.clients.suggestions.draftSuggestion(req(sessionId, id));
    const dismiss = await failureOf(t.clients.suggestions.dismissSuggestion(req(sessionId, id)));
    expectNotOpen(dismiss, id, SuggestionState.DRAFTED);
    const restore = await failureOf(t.clients.suggestions.restoreSuggestion(req(sessionId, id)));
    expectNotOpen(restore, id, SuggestionState.DRAFTED);
    expect(await logRecords(t.redis, sessionId)).toHaveLength(2);
  });
});

describe("dismiss and restore", () => {
  test("dismissed, dismissed again as it is, not draftable, restored, restored again as it is", async () => {
    const { sessionId, offers } = await session(1);
    const id = offers[0] as string;
    const dismissed = (await t.clients.suggestions.dismissSuggestion(req(sessionId, id)))
      .suggestion;
    expect(dismissed).toMatchObject({ id, state: SuggestionState.DISMISSED });
    expect(dismissed?.settledAt).toBeDefined();
    const again = (await t.clients.suggestions.dismissSuggestion(req(sessionId, id))).suggestion;
    expect(again).toEqual(dismissed);
    expect(await logRecords(t.redis, sessionId)).toHaveLength(2);

    const draft = await failureOf(t.clients.suggestions.draftSuggestion(req(sessionId, id)));
    expectNotOpen(draft, id, SuggestionState.DISMISSED);

    const restored = (await t.clients.suggestions.restoreSuggestion(req(sessionId, id))).suggestion;
    expect(restored).toMatchObject({ id, state: SuggestionState.OPEN });
    expect(restored?.settledAt).toBeUndefined();
    const log = await logRecords(t.redis, sessionId);
    expect(log.map((r) => r.outcome ?? r.type)).toEqual(["offered", "dismissed", "restored"]);
    expect(log.map((r) => r.by)).toEqual([undefined, "person", "person"]);
    expect(dismissed?.settledBy).toBe(Settler.PERSON);
    expect(restored?.settledBy).toBe(Settler.UNSPECIFIED);

    const restoredAgain = await t.clients.suggestions.restoreSuggestion(req(sessionId, id));
    expect(restoredAgain.suggestion).toEqual(restored);
    expect(await logRecords(t.redis, sessionId)).toHaveLength(3);

    // Open again, it takes any outcome once more.
    const drafted = (await t.clients.suggestions.draftSuggestion(req(sessionId, id))).suggestion;
    expect(drafted?.state).toBe(SuggestionState.DRAFTED);
  });

  test("restoring an open suggestion answers it as it is and records nothing", async () => {
    const { sessionId, offers } = await session(1);
    const id = offers[0] as string;
    const before = (await t.clients.suggestions.getSuggestion(req(sessionId, id))).suggestion;
    const res = await t.clients.suggestions.restoreSuggestion(req(sessionId, id));
    expect(res.suggestion).toEqual(before);
    expect(await logRecords(t.redis, sessionId)).toHaveLength(1);
  });

  test("with 3 open, a restore fails with open-limit and records nothing", async () => {
    const { sessionId, offers } = await session(3);
    const [a, b, c] = offers as [string, string, string];
    await t.clients.suggestions.dismissSuggestion(req(sessionId, a));
    const d = (await offerOne(t.clients, sessionId, "Task 3")).id;
    const before = await logRecords(t.redis, sessionId);
    expectOpenLimit(await failureOf(t.clients.suggestions.restoreSuggestion(req(sessionId, a))));
    expect(await logRecords(t.redis, sessionId)).toEqual(before);

    await t.clients.suggestions.draftSuggestion(req(sessionId, c));
    const restored = await t.clients.suggestions.restoreSuggestion(req(sessionId, a));
    expect(restored.suggestion?.state).toBe(SuggestionState.OPEN);
    const lists = await t.clients.suggestions.listSuggestions({ sessionId });
    expect(ids(lists.open)).toEqual([d, b, a]);
    expect(ids(lists.settled)).toEqual([c]);
  });
});

test("a started suggestion cannot be drafted, dismissed or restored; it keeps its chat", async () => {
  const { sessionId, offers } = await session(1);
  const id = offers[0] as string;
  // Start is another RPC's; its atomic step is the same script, run here directly.
  const store = new SuggestionStore(createRedisClient(sharedRedisUrl()));
  expect((await store.settle(sessionId, id, "started", "chat-42")).kind).toBe("recorded");
  store.redis.disconnect();
  for (const call of [
    () => t.clients.suggestions.draftSuggestion(req(sessionId, id)),
    () => t.clients.suggestions.dismissSuggestion(req(sessionId, id)),
    () => t.clients.suggestions.restoreSuggestion(req(sessionId, id)),
  ]) {
    expectNotOpen(await failureOf(call()), id, SuggestionState.STARTED);
  }
  const { suggestion } = await t.clients.suggestions.getSuggestion(req(sessionId, id));
  expect(suggestion).toMatchObject({ state: SuggestionState.STARTED, chatId: "chat-42" });
  expect(await logRecords(t.redis, sessionId)).toHaveLength(2);
});

test("an unknown id is not-found on get, draft, dismiss and restore, and records nothing", async () => {
  const { sessionId } = await session(1);
  const ghost = "no-such-suggestion";
  for (const call of [
    () => t.clients.suggestions.getSuggestion(req(sessionId, ghost)),
    () => t.clients.suggestions.draftSuggestion(req(sessionId, ghost)),
    () => t.clients.suggestions.dismissSuggestion(req(sessionId, ghost)),
    () => t.clients.suggestions.restoreSuggestion(req(sessionId, ghost)),
  ]) {
    expectNotFound(await failureOf(call()), ghost);
  }
  expect(await logRecords(t.redis, sessionId)).toHaveLength(1);
  // A session that never offered anything: not-found too, and no stream appears.
  const empty = uniqueId();
  expectNotFound(
    await failureOf(t.clients.suggestions.dismissSuggestion(req(empty, ghost))),
    ghost,
  );
  expect(await t.redis.exists(`suggest:{${empty}}:log`)).toBe(0);
});

test("malformed ids are INVALID_ARGUMENT on every RPC, session id first", async () => {
  const s = t.clients.suggestions;
  const bad = ["", "has space", "slash/id", "x".repeat(129), "é"];
  const calls = (sessionId: string, suggestionId: string) => [
    () => s.getSuggestion(req(sessionId, suggestionId)),
    () => s.draftSuggestion(req(sessionId, suggestionId)),
    () => s.dismissSuggestion(req(sessionId, suggestionId)),
    () => s.restoreSuggestion(req(sessionId, suggestionId)),
  ];
  for (const value of bad) {
    const sessionMessage =
      value === ""
        ? "session_id is required"
        : "session_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'";
    const sessionCalls = [
      () => s.listSuggestions({ sessionId: value }),
      () => firstOf(s.watchSuggestions({ sessionId: value })),
      ...calls(value, "also bad!"),
    ];
    for (const call of sessionCalls) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      expect((err as ConnectError).rawMessage).toBe(sessionMessage);
    }
    const suggestionMessage =
      value === ""
        ? "suggestion_id is required"
        : "suggestion_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'";
    for (const call of calls("fine-session", value)) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      expect((err as ConnectError).rawMessage).toBe(suggestionMessage);
    }
  }
});

test("concurrent restores with 2 open let exactly one succeed, across two servers", async () => {
  const rounds = await Promise.all(
    Array.from({ length: 8 }, async () => {
      const { sessionId, offers } = await session(3);
      for (const id of offers) await t.clients.suggestions.dismissSuggestion(req(sessionId, id));
      await offerOne(t.clients, sessionId, "Open 1");
      await offerOne(t.clients, sessionId, "Open 2");
      const results = await Promise.allSettled(
        offers.flatMap((id) => [
          t.clients.suggestions.restoreSuggestion(req(sessionId, id)),
          other.clients.suggestions.restoreSuggestion(req(sessionId, id)),
        ]),
      );
      const log = await logRecords(t.redis, sessionId);
      const lists = await t.clients.suggestions.listSuggestions({ sessionId });
      return { results, log, lists };
    }),
  );
  for (const { results, log, lists } of rounds) {
    const restoredIds = new Set(
      results.flatMap((r) => (r.status === "fulfilled" ? [r.value.suggestion?.id] : [])),
    );
    // The same suggestion may be answered "as it is" by its second restore, never another.
    expect(restoredIds.size).toBe(1);
    for (const r of results) {
      if (r.status === "rejected") expectOpenLimit(await failureOf(Promise.reject(r.reason)));
    }
    expect(log.filter((r) => r.outcome === "restored")).toHaveLength(1);
    expect(lists.open).toHaveLength(3);
    expect(lists.settled).toHaveLength(2);
  }
});

/** The first message of a server stream (or its error). */
async function firstOf<T>(stream: AsyncIterable<T>): Promise<T | undefined> {
  for await (const m of stream) return m;
  return undefined;
}
