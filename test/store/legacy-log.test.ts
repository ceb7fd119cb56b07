import { readFileSync } from "node:fs";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { expect, test } from "vitest";
import {
  SettlementOutcome,
  Settler,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { settlementNotes } from "../../sdk/src/settlement-notes.js";
import { parseEntries } from "../../server/domain/fold.js";
import { sessionKeys } from "../../server/store/keys.js";
import { putSession, uniqueId } from "../support/harness.js";
import { foldLog, foldSettlements } from "../support/model/fold.js";
import { useTestServer } from "../support/server-fixture.js";
import { NOTE } from "../support/settlements.js";

/*
 * A log written before settled records carried `by` (test/fixtures/logs/
 * before-settled-by.json) reads unchanged: the same lists as before, every settlement the
 * person's, and the report-back of what the fold accepted.
 */

const fixture = JSON.parse(
  readFileSync(new URL("../fixtures/logs/before-settled-by.json", import.meta.url), "utf8"),
) as { entries: [string, string[]][] };
const id = (n: number) => `6f1c2e0a-0b5d-4d7e-9a51-1f3c1a2b3c0${n}`;

const env = useTestServer();

/** The fixture written onto a new session's stream with its own entry ids. */
async function loaded(): Promise<string> {
  const sessionId = uniqueId("legacy");
  await putSession(env.clients, { sessionId });
  for (const [entryId, flat] of fixture.entries) {
    await env.redis.xadd(sessionKeys(sessionId).log, entryId, ...flat);
  }
  return sessionId;
}

test("the fold reads the old log's lists unchanged, every settlement the person's", async () => {
  const sessionId = await loaded();
  const lists = await env.clients.suggestions.listSuggestions({ sessionId });
  expect(lists.open.map((s) => [s.id, s.state, s.settledBy])).toEqual([
    [id(4), SuggestionState.OPEN, Settler.UNSPECIFIED],
  ]);
  expect(lists.settled.map((s) => [s.id, s.state, s.settledBy, s.chatId])).toEqual([
    [id(1), SuggestionState.STARTED, Settler.PERSON, "chat-7f3a"],
    [id(2), SuggestionState.DRAFTED, Settler.PERSON, ""],
    [id(3), SuggestionState.DISMISSED, Settler.PERSON, ""],
  ]);
  expect(lists.settled.map((s) => s.settledAt && timestampMs(s.settledAt))).toEqual([
    1764579780000, 1764580080000, 1764580140000,
  ]);
  const { suggestion } = await env.clients.suggestions.getSuggestion({
    sessionId,
    suggestionId: id(1),
  });
  expect(suggestion).toEqual(lists.settled[0]);
  // The service's reading is the TypeScript fold's (domain/fold.ts).
  const pure = foldLog(sessionId, parseEntries(fixture.entries));
  expect({ open: lists.open, settled: lists.settled }).toEqual({
    open: pure.open,
    settled: pure.settled,
  });
});

test("the old log's report-back: the accepted settlements in log order, the person's", async () => {
  const sessionId = await loaded();
  const res = await env.clients.suggestions.listSettlements({ sessionId, after: "" });
  expect(res.settlements.map((s) => [s.cursor, s.outcome, s.settledBy])).toEqual([
    ["1764579780000-0", SettlementOutcome.STARTED, Settler.PERSON],
    ["1764579840000-0", SettlementOutcome.DISMISSED, Settler.PERSON],
    ["1764580020000-0", SettlementOutcome.RESTORED, Settler.PERSON],
    ["1764580080000-0", SettlementOutcome.DRAFTED, Settler.PERSON],
    ["1764580140000-0", SettlementOutcome.DISMISSED, Settler.PERSON],
  ]);
  expect(res.cursor).toBe("1764580140000-0");
  expect(settlementNotes(res.settlements)).toEqual([
    NOTE.started("Fix the flaky upload test"),
    NOTE.dismissed("Document the retry policy"),
    NOTE.restored("Document the retry policy"),
    NOTE.drafted("Document the retry policy"),
    NOTE.dismissed("Bump the Node version"),
  ]);
  expect(res.settlements).toEqual(foldSettlements(sessionId, parseEntries(fixture.entries)));
  const later = await env.clients.suggestions.listSettlements({
    sessionId,
    after: "1764579900000-0",
  });
  expect(later.settlements.map((s) => s.cursor)).toEqual([
    "1764580020000-0",
    "1764580080000-0",
    "1764580140000-0",
  ]);
});
