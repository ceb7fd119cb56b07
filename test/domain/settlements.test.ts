import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import {
  SettlementOutcome,
  Settler,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { checkCursor, compareStreamIds, LAST_STREAM_ID } from "../../server/domain/cursor.js";
import type { LogRecord } from "../../server/domain/fold.js";
import { foldLog, foldSettlements } from "../support/model/fold.js";

let seq = 0;
function rec(fields: Record<string, string>): LogRecord {
  seq++;
  return { entryId: `${1_700_000_000_000 + seq}-0`, fields };
}
const offered = (id: string) =>
  rec({ type: "offered", id, turn: `t-${id}`, title: `T ${id}`, tldr: "r", brief: "b" });
const settled = (id: string, outcome: string, extra: Record<string, string> = {}) =>
  rec({ type: "settled", id, outcome, ...extra });

describe("who settled it", () => {
  test("`by` agent is the agent's; none, person or anything else is the person's; open is UNSPECIFIED", () => {
    const lists = foldLog("s", [
      offered("a"),
      offered("b"),
      offered("c"),
      offered("d"),
      offered("e"),
      settled("a", "dismissed", { by: "agent", reason: "stale", call: "k" }),
      settled("b", "dismissed"),
      settled("c", "drafted", { by: "person" }),
      settled("d", "started", { by: "robot", chat: "c-1" }),
      settled("e", "dismissed", { by: "agent" }),
      settled("e", "restored", { by: "person" }),
    ]);
    const by = Object.fromEntries([...lists.byId.values()].map((s) => [s.id, s.settledBy]));
    expect(by).toEqual({
      a: Settler.AGENT,
      b: Settler.PERSON,
      c: Settler.PERSON,
      d: Settler.PERSON,
      e: Settler.UNSPECIFIED,
    });
  });

  test("a withdrawn offer is a dismissal: the person may restore it", () => {
    const lists = foldLog("s", [
      offered("a"),
      settled("a", "dismissed", { by: "agent" }),
      settled("a", "restored", { by: "person" }),
    ]);
    expect(lists.open.map((s) => [s.id, s.state, s.settledBy])).toEqual([
      ["a", SuggestionState.OPEN, Settler.UNSPECIFIED],
    ]);
  });
});

describe("foldSettlements", () => {
  test("only the settlements the fold accepted, in log order, after the cursor", () => {
    const log = [
      settled("a", "dismissed"), // before its offer
      offered("a"),
      settled("a", "restored"), // a is open: does not fit
      settled("a", "dismissed", { by: "agent" }),
      settled("a", "dismissed"), // already dismissed
      settled("a", "restored"),
      settled("a", "started", { chat: "c-9" }),
      settled("ghost", "dismissed"),
    ];
    const all = foldSettlements("s", log);
    expect(all.map((s) => [s.cursor, s.outcome, s.settledBy, s.chatId])).toEqual([
      [log[3]?.entryId, SettlementOutcome.DISMISSED, Settler.AGENT, ""],
      [log[5]?.entryId, SettlementOutcome.RESTORED, Settler.PERSON, ""],
      [log[6]?.entryId, SettlementOutcome.STARTED, Settler.PERSON, "c-9"],
    ]);
    expect(all[2]?.suggestion).toMatchObject({ state: SuggestionState.STARTED, chatId: "c-9" });
    expect(foldSettlements("s", log, log[3]?.entryId)).toEqual(all.slice(1));
    expect(foldSettlements("s", log, log[7]?.entryId)).toEqual([]);
  });
});

describe("cursors", () => {
  test("stream ids are ordered as numbers, not as text", () => {
    expect(compareStreamIds("9-0", "10-0")).toBe(-1);
    expect(compareStreamIds("10-2", "10-10")).toBe(-1);
    expect(compareStreamIds("10-2", "10-2")).toBe(0);
    expect(compareStreamIds(LAST_STREAM_ID, "1-0")).toBe(1);
  });

  test("empty or a stream id up to 2^64-1 passes; anything else is INVALID_ARGUMENT", () => {
    for (const ok of ["", "0-0", "1764579600000-3", LAST_STREAM_ID]) {
      expect(checkCursor("after", ok)).toBe(ok);
    }
    for (const bad of ["x", "1", "1-", "-1", "1-2-3", "18446744073709551616-0", "1-0\n", "*"]) {
      let err: unknown;
      try {
        checkCursor("after", bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    }
  });
});
