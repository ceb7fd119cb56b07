import { timestampMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  SettlementOutcome,
  Settler,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { settlementNotes } from "../../sdk/src/settlement-notes.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { SuggestServer } from "../../server/server.js";
import {
  type Clients,
  grpcClients,
  redisClient,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { appendRaw, failureOf, logRecords } from "../support/lists.js";
import { NOTE, SettlementReader } from "../support/settlements.js";
import { offerOne, sessionWithOffers } from "../support/suggest.js";
import { withdraw } from "../support/withdraw.js";

let servers: SuggestServer[];
let clients: Clients;
let otherClients: Clients;
let redis: RedisClient;
beforeAll(async () => {
  servers = await Promise.all([startTestServer(), startTestServer()]);
  [clients, otherClients] = servers.map((s) => grpcClients(s.url)) as [Clients, Clients];
  redis = redisClient();
});
afterAll(async () => {
  redis.disconnect();
  await Promise.all(servers.map((s) => s.close()));
});

const session = (...titles: string[]) => sessionWithOffers(clients, ...titles);

describe("ListSettlements and the notes", () => {
  test("a start, a dismissal, a draft, a restore and a withdrawal, asked with each cursor in turn", async () => {
    const { sessionId, ids } = await session("Fix CI", "Bump deps", "Write docs");
    const [ci, deps, docs] = ids as [string, string, string];
    const reader = new SettlementReader(sessionId);
    expect(await reader.poll(clients)).toEqual([]);
    expect(reader.cursor).toBe("");

    const { chatId } = await clients.suggestions.startSuggestion({ sessionId, suggestionId: ci });
    expect(await reader.poll(clients)).toEqual([NOTE.started("Fix CI")]);
    expect(await reader.poll(otherClients)).toEqual([]);
    const old = (await offerOne(clients, sessionId, "Old idea")).id;
    expect(await reader.poll(otherClients)).toEqual([]);
    await clients.suggestions.dismissSuggestion({ sessionId, suggestionId: deps });
    expect(await reader.poll(otherClients)).toEqual([
      'The user dismissed your suggestion "Bump deps"; do not offer it again.',
    ]);
    await clients.suggestions.draftSuggestion({ sessionId, suggestionId: docs });
    expect(await reader.poll(clients)).toEqual([NOTE.drafted("Write docs")]);
    await clients.suggestions.restoreSuggestion({ sessionId, suggestionId: deps });
    expect(await reader.poll(clients)).toEqual([NOTE.restored("Bump deps")]);
    await withdraw(clients, { sessionId, title: "Old idea", reason: "Did it here." });
    expect(await reader.poll(otherClients)).toEqual(['You withdrew your suggestion "Old idea".']);
    expect(await reader.poll(clients)).toEqual([]);

    // From the start: the same five, in log order, each once, with the contract's lines.
    const all = await clients.suggestions.listSettlements({ sessionId, after: "" });
    expect(all.settlements).toEqual(reader.heard);
    expect(all.cursor).toBe(reader.cursor);
    expect(settlementNotes(all.settlements)).toEqual([
      'The user started your suggestion "Fix CI" as a new chat.',
      'The user dismissed your suggestion "Bump deps"; do not offer it again.',
      'The user saved your suggestion "Write docs" as a draft.',
      'The user restored your suggestion "Bump deps"; it waits again.',
      'You withdrew your suggestion "Old idea".',
    ]);
    // Each carries its outcome, who, the chat, the time and the cursor of its record.
    const settled = (await logRecords(redis, sessionId)).filter((r) => r.type === "settled");
    const entries = (await redis.xrange(`suggest:{${sessionId}}:log`, "-", "+"))
      .filter(([, flat]) => flat[1] === "settled")
      .map(([entryId]) => entryId);
    expect(all.settlements.map((s) => [s.outcome, s.settledBy, s.chatId, s.cursor])).toEqual([
      [SettlementOutcome.STARTED, Settler.PERSON, chatId, entries[0]],
      [SettlementOutcome.DISMISSED, Settler.PERSON, "", entries[1]],
      [SettlementOutcome.DRAFTED, Settler.PERSON, "", entries[2]],
      [SettlementOutcome.RESTORED, Settler.PERSON, "", entries[3]],
      [SettlementOutcome.DISMISSED, Settler.AGENT, "", entries[4]],
    ]);
    expect(all.settlements.map((s) => s.settledAt && timestampMs(s.settledAt))).toEqual(
      settled.map((r) => Number(r.time)),
    );
    // The suggestion as it stood right after each one.
    expect(
      all.settlements.map((s) => [s.suggestion?.id, s.suggestion?.state, s.suggestion?.settledBy]),
    ).toEqual([
      [ci, SuggestionState.STARTED, Settler.PERSON],
      [deps, SuggestionState.DISMISSED, Settler.PERSON],
      [docs, SuggestionState.DRAFTED, Settler.PERSON],
      [deps, SuggestionState.OPEN, Settler.UNSPECIFIED],
      [old, SuggestionState.DISMISSED, Settler.AGENT],
    ]);
    expect(all.settlements[0]?.suggestion?.chatId).toBe(chatId);
    expect(all.settlements[3]?.suggestion?.settledAt).toBeUndefined();
  });

  test("an empty answer keeps the cursor; a chat without settlements answers none", async () => {
    const { sessionId } = await session("Quiet");
    expect(await clients.suggestions.listSettlements({ sessionId, after: "" })).toMatchObject({
      settlements: [],
      cursor: "",
    });
    const unknown = uniqueId("never");
    const res = await clients.suggestions.listSettlements({ sessionId: unknown, after: "5-0" });
    expect(res).toMatchObject({ settlements: [], cursor: "5-0" });
    const last = "18446744073709551615-18446744073709551615";
    expect((await clients.suggestions.listSettlements({ sessionId, after: last })).cursor).toBe(
      last,
    );
  });

  test("settlements the fold did not accept are not reported; a record without `by` is the person's", async () => {
    const { sessionId, ids } = await session("Legacy");
    const id = ids[0] as string;
    await appendRaw(redis, sessionId, { type: "settled", id: "ghost", outcome: "dismissed" });
    await appendRaw(redis, sessionId, { type: "settled", id, outcome: "restored" }); // not dismissed
    const legacy = await appendRaw(redis, sessionId, { type: "settled", id, outcome: "dismissed" });
    await appendRaw(redis, sessionId, { type: "settled", id, outcome: "dismissed", by: "agent" });
    const res = await clients.suggestions.listSettlements({ sessionId, after: "" });
    expect(res.settlements.map((s) => [s.cursor, s.outcome, s.settledBy])).toEqual([
      [legacy, SettlementOutcome.DISMISSED, Settler.PERSON],
    ]);
    expect(settlementNotes(res.settlements)).toEqual([NOTE.dismissed("Legacy")]);
  });

  test("a malformed cursor or session is INVALID_ARGUMENT and never reaches Redis", async () => {
    const { sessionId } = await session("Guarded");
    for (const after of [
      "abc",
      "1",
      "1-2-3",
      "-",
      "+",
      "(0-0",
      "1-x",
      "18446744073709551616-0",
      " 1-0",
    ]) {
      const f = await failureOf(clients.suggestions.listSettlements({ sessionId, after }));
      expect([f.code, f.message]).toEqual([
        3,
        "after must be empty or a cursor that ListSettlements answered",
      ]);
    }
    const noSession = await failureOf(
      clients.suggestions.listSettlements({ sessionId: "", after: "" }),
    );
    expect(noSession.message).toBe("session_id is required");
  });

  test("while settlements race on two instances, a reader polling both misses and repeats nothing", async () => {
    const { sessionId, ids } = await session("R1", "R2", "R3");
    const reader = new SettlementReader(sessionId);
    let done = false;
    const polls: Promise<void> = (async () => {
      for (let i = 0; !done; i++) await reader.poll(i % 2 === 0 ? clients : otherClients);
    })();
    // Dismiss and restore each offer over and over, on both instances at once.
    await Promise.all(
      ids.flatMap((suggestionId, n) =>
        [clients, otherClients].map(async (c, k) => {
          for (let round = 0; round < 15; round++) {
            const rpc = (round + n + k) % 2 === 0 ? "dismissSuggestion" : "restoreSuggestion";
            await c.suggestions[rpc]({ sessionId, suggestionId }).catch(() => undefined);
          }
        }),
      ),
    );
    await withdraw(otherClients, { sessionId, title: "R1" }).catch(() => undefined);
    done = true;
    await polls;
    await reader.poll(clients);
    const all = await clients.suggestions.listSettlements({ sessionId, after: "" });
    expect(all.settlements.length).toBeGreaterThan(10);
    expect(reader.heard).toEqual(all.settlements);
    expect(new Set(reader.heard.map((s) => s.cursor)).size).toBe(reader.heard.length);
    expect(reader.cursor).toBe(all.cursor);
  });
});
