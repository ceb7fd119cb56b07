import { timestampMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, test } from "vitest";
import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { type LogRecord, listsFromOffers, parseEntries } from "../../server/domain/fold.js";
import { foldLog } from "../support/model/fold.js";

let seq = 0;
/** A record as the stream would hold it; entry ids grow by one ms per record. */
function rec(fields: Record<string, string>): LogRecord {
  seq++;
  return { entryId: `${1_700_000_000_000 + seq}-0`, fields };
}
const offered = (id: string, extra: Record<string, string> = {}) =>
  rec({
    type: "offered",
    id,
    turn: `turn-${id}`,
    title: `T ${id}`,
    tldr: "r",
    brief: "b",
    ...extra,
  });
const settled = (id: string, outcome: string, extra: Record<string, string> = {}) =>
  rec({ type: "settled", id, outcome, ...extra });

const ids = (list: Suggestion[]) => list.map((s) => s.id);
const states = (lists: ReturnType<typeof foldLog>) =>
  Object.fromEntries([...lists.byId.values()].map((s) => [s.id, SuggestionState[s.state]]));

describe("foldLog", () => {
  test("open offers newest first, settled ones in offer order", () => {
    const lists = foldLog("s", [
      offered("a"),
      offered("b"),
      offered("c"),
      offered("d"),
      settled("c", "dismissed"),
      settled("a", "drafted"),
    ]);
    expect(ids(lists.open)).toEqual(["d", "b"]);
    expect(ids(lists.settled)).toEqual(["a", "c"]);
  });

  test("a restored offer returns to its place by offer time, in both lists", () => {
    const lists = foldLog("s", [
      offered("a"),
      offered("b"),
      offered("c"),
      settled("b", "dismissed"),
      settled("a", "dismissed"),
      settled("b", "restored"),
    ]);
    expect(ids(lists.open)).toEqual(["c", "b"]);
    expect(ids(lists.settled)).toEqual(["a"]);
    const b = lists.byId.get("b");
    expect(b?.state).toBe(SuggestionState.OPEN);
    expect(b?.settledAt).toBeUndefined();
  });

  test("each suggestion carries its session, turn, fields, times and chat", () => {
    const lists = foldLog("sess", [
      rec({
        type: "offered",
        id: "a",
        turn: "t1",
        title: "Fix",
        tldr: "Why",
        brief: "How",
        time: "1000",
      }),
      rec({ type: "settled", id: "a", outcome: "started", chat: "chat-9", time: "2500" }),
    ]);
    const a = lists.settled[0];
    expect(a).toMatchObject({
      id: "a",
      sessionId: "sess",
      turnId: "t1",
      title: "Fix",
      tldr: "Why",
      brief: "How",
      state: SuggestionState.STARTED,
      chatId: "chat-9",
    });
    expect(a?.offeredAt && timestampMs(a.offeredAt)).toBe(1000);
    expect(a?.settledAt && timestampMs(a.settledAt)).toBe(2500);
  });

  test("a record without a usable time takes the time of its stream id", () => {
    const lists = foldLog("s", [
      { entryId: "1234-0", fields: { type: "offered", id: "a", time: "x" } },
      { entryId: "1235-0", fields: { type: "offered", id: "b", time: "" } },
      { entryId: "1236-0", fields: { type: "offered", id: "c" } },
    ]);
    const ms = lists.open.map((s) => s.offeredAt && timestampMs(s.offeredAt));
    expect(ms).toEqual([1236, 1235, 1234]);
  });

  test("a settlement that names no offer changes nothing", () => {
    const lists = foldLog("s", [
      settled("ghost", "dismissed"),
      offered("a"),
      settled("zzz", "started"),
    ]);
    expect(ids(lists.open)).toEqual(["a"]);
    expect(lists.byId.has("ghost")).toBe(false);
  });

  test("a settlement before its offer changes nothing: the log is read in order", () => {
    const lists = foldLog("s", [settled("a", "dismissed"), offered("a")]);
    expect(states(lists)).toEqual({ a: "OPEN" });
  });

  test("outcomes apply only to the standing the contract allows", () => {
    const lists = foldLog("s", [
      offered("started"),
      offered("dismissed"),
      offered("drafted"),
      offered("open"),
      settled("started", "started", { chat: "c1" }),
      settled("dismissed", "dismissed"),
      settled("drafted", "drafted"),
      // none of these fits:
      settled("dismissed", "started", { chat: "c2" }),
      settled("dismissed", "drafted"),
      settled("started", "dismissed"),
      settled("started", "restored"),
      settled("drafted", "dismissed"),
      settled("drafted", "restored"),
      settled("open", "restored"),
      settled("drafted", "started", { chat: "c3" }),
      settled("open", "bogus"),
    ]);
    expect(states(lists)).toEqual({
      started: "STARTED",
      dismissed: "DISMISSED",
      drafted: "DRAFTED",
      open: "OPEN",
    });
    expect(lists.byId.get("started")?.chatId).toBe("c1");
    expect(lists.byId.get("dismissed")?.chatId).toBe("");
  });

  test("a new settlement replaces the previous one, a restore removes it", () => {
    const lists = foldLog("s", [
      offered("a"),
      settled("a", "dismissed", { time: "10" }),
      settled("a", "restored", { time: "20" }),
      settled("a", "drafted", { time: "30" }),
    ]);
    const a = lists.byId.get("a");
    expect(a?.state).toBe(SuggestionState.DRAFTED);
    expect(a?.settledAt && timestampMs(a.settledAt)).toBe(30);
  });

  test("limits are not checked: a 500-character title and more than 3 open still fold", () => {
    const long = "x".repeat(500);
    const lists = foldLog("s", [
      offered("a", { title: long, brief: "b".repeat(9000) }),
      offered("b"),
      offered("c"),
      offered("d"),
      offered("e"),
    ]);
    expect(lists.open).toHaveLength(5);
    expect(lists.byId.get("a")?.title).toBe(long);
    expect(lists.byId.get("a")?.brief).toHaveLength(9000);
  });

  test("records of unknown kinds, records without an id and repeated offers are skipped", () => {
    const lists = foldLog("s", [
      rec({ type: "comment", id: "a", text: "from another writer" }),
      rec({ type: "offered", title: "no id" }),
      rec({ type: "offered", id: "", title: "empty id" }),
      offered("a", { title: "first" }),
      offered("a", { title: "second" }),
      rec({ type: "settled", outcome: "dismissed" }),
      rec({ id: "a", outcome: "dismissed" }),
    ]);
    expect(lists.open.map((s) => [s.id, s.title])).toEqual([["a", "first"]]);
    expect(lists.settled).toEqual([]);
  });

  test("an empty log folds to empty lists", () => {
    const lists = foldLog("s", []);
    expect(lists.open).toEqual([]);
    expect(lists.settled).toEqual([]);
  });

  test("parseEntries turns a stream reply into records", () => {
    expect(parseEntries([["1-0", ["type", "offered", "id", "a"]]])).toEqual([
      { entryId: "1-0", fields: { type: "offered", id: "a" } },
    ]);
  });
});

describe("listsFromOffers", () => {
  test("each offer with the settlement it stands by gives the suggestions of the fold", () => {
    const a = offered("a", { time: "100" });
    const b = offered("b");
    const c = offered("c");
    const aDismissed = settled("a", "dismissed");
    const aRestored = settled("a", "restored");
    const bStarted = settled("b", "started", { chat: "chat-1", time: "200" });
    const aDrafted = settled("a", "drafted", { time: "x" });
    const log = [a, b, c, aDismissed, aRestored, bStarted, settled("b", "dismissed"), aDrafted];
    const lists = listsFromOffers("s", [
      { offer: a, settlement: aDrafted },
      { offer: b, settlement: bStarted },
      { offer: c, settlement: undefined },
    ]);
    expect(lists).toEqual(foldLog("s", log));
    expect(ids(lists.settled)).toEqual(["a", "b"]);
    expect(lists.byId.get("b")?.chatId).toBe("chat-1");
  });

  test("an offer record without an id, or a repeated one, is skipped as the fold skips it", () => {
    const first = offered("a", { title: "first" });
    const lists = listsFromOffers("s", [
      { offer: rec({ type: "offered", title: "no id" }), settlement: undefined },
      { offer: first, settlement: undefined },
      { offer: offered("a", { title: "second" }), settlement: undefined },
    ]);
    expect(lists.open.map((s) => [s.id, s.title])).toEqual([["a", "first"]]);
  });
});
