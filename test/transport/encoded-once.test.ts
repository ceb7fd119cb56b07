import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { expect, test } from "vitest";
import { SuggestionSchema, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  DismissSuggestionResponseSchema,
  ListSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { encodeMessage } from "../../server/transport/encoded-once.js";

const suggestion = (id: string, settled: boolean) =>
  create(SuggestionSchema, {
    id,
    sessionId: "s",
    turnId: "t",
    title: "Émoji 🎉 title",
    tldr: "r",
    brief: "b",
    state: settled ? SuggestionState.DISMISSED : SuggestionState.OPEN,
    offeredAt: timestampFromMs(1_700_000_000_123),
    ...(settled ? { settledAt: timestampFromMs(1_700_000_001_000) } : {}),
  });

function deepFreeze<T extends object>(message: T): T {
  for (const value of Object.values(message)) {
    if (value !== null && typeof value === "object") deepFreeze(value as object);
  }
  return Object.freeze(message);
}

test("a frozen message's bytes decode to the same message as toBinary's, and are reused", () => {
  const list = deepFreeze(
    create(ListSuggestionsResponseSchema, {
      open: [suggestion("a", false), suggestion("b", false)],
      settled: [suggestion("c", true)],
    }),
  );
  const bytes = encodeMessage(ListSuggestionsResponseSchema, list);
  expect(fromBinary(ListSuggestionsResponseSchema, bytes)).toEqual(
    fromBinary(ListSuggestionsResponseSchema, toBinary(ListSuggestionsResponseSchema, list)),
  );
  expect(encodeMessage(ListSuggestionsResponseSchema, list)).toBe(bytes);
  // A (not frozen) message holding a frozen one: same decoding, the part's bytes reused.
  const [first] = list.open;
  const dismiss = create(DismissSuggestionResponseSchema, { suggestion: first });
  expect(
    fromBinary(
      DismissSuggestionResponseSchema,
      encodeMessage(DismissSuggestionResponseSchema, dismiss),
    ),
  ).toEqual(dismiss);
  // A message of message fields only is their parts alone, byte for byte toBinary's.
  expect(Buffer.from(encodeMessage(DismissSuggestionResponseSchema, dismiss))).toEqual(
    Buffer.from(toBinary(DismissSuggestionResponseSchema, dismiss)),
  );
  // ... unless it holds unknown fields, which are encoded with it.
  const unknown = create(DismissSuggestionResponseSchema, { suggestion: first });
  unknown.$unknown = [{ no: 9, wireType: 0, data: new Uint8Array([42]) }];
  const kept = fromBinary(
    DismissSuggestionResponseSchema,
    encodeMessage(DismissSuggestionResponseSchema, unknown),
  );
  expect(kept.suggestion).toEqual(first);
  expect(kept.$unknown?.map((u) => [u.no, [...u.data]])).toEqual([[9, [42]]]);
});

test("a message that is not frozen is encoded afresh, as toBinary encodes it", () => {
  const message = suggestion("a", true);
  const before = encodeMessage(SuggestionSchema, message);
  expect(before).toEqual(toBinary(SuggestionSchema, message));
  message.title = "changed";
  expect(fromBinary(SuggestionSchema, encodeMessage(SuggestionSchema, message)).title).toBe(
    "changed",
  );
});
