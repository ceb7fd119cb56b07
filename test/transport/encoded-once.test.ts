import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { expect, test } from "vitest";
import { SuggestionSchema, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  DismissSuggestionResponseSchema,
  ListSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { encodeFrame, encodeMessage, frameBytes } from "../../server/transport/encoded-once.js";

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
  expect(before).toEqual(Buffer.from(toBinary(SuggestionSchema, message)));
  message.title = "changed";
  expect(fromBinary(SuggestionSchema, encodeMessage(SuggestionSchema, message)).title).toBe(
    "changed",
  );
});

test("a frame is the flags byte, the length and the message's bytes, the frozen ones' kept", () => {
  const head = (frame: Buffer) => [frame[0], frame.readUInt32BE(1)];
  // From its parts (frozen), more than 127 bytes so that lengths take two varint bytes.
  const list = deepFreeze(
    create(ListSuggestionsResponseSchema, {
      open: ["a", "b", "c", "d"].map((id) => suggestion(id, false)),
      settled: [suggestion("e", true)],
    }),
  );
  const frame = encodeFrame(ListSuggestionsResponseSchema, list);
  const bytes = toBinary(ListSuggestionsResponseSchema, list);
  expect(bytes.length).toBeGreaterThan(127);
  expect(head(frame)).toEqual([0, frame.length - 5]);
  expect(fromBinary(ListSuggestionsResponseSchema, frame.subarray(5))).toEqual(
    fromBinary(ListSuggestionsResponseSchema, bytes),
  );
  expect(Buffer.from(encodeMessage(ListSuggestionsResponseSchema, list))).toEqual(
    frame.subarray(5),
  );
  // A frame of bytes kept before: the same bytes again.
  expect(encodeFrame(ListSuggestionsResponseSchema, list)).toEqual(frame);
  // Not frozen: toBinary's bytes.
  const message = suggestion("f", true);
  const loose = encodeFrame(SuggestionSchema, message);
  expect(head(loose)).toEqual([0, loose.length - 5]);
  expect(loose.subarray(5)).toEqual(Buffer.from(toBinary(SuggestionSchema, message)));
  // Bytes encoded elsewhere.
  for (const kept of [false, true]) {
    const framed = frameBytes(new Uint8Array([8, 1]), kept);
    expect([...framed]).toEqual([0, 0, 0, 0, 2, 8, 1]);
    // A kept frame has a buffer of its own, not a slice of Node's pool.
    expect(framed.buffer.byteLength === framed.length).toBe(kept);
  }
});

test("bytes and frames kept with a frozen message have buffers of their own, others the pool's", () => {
  // A buffer of its own, or of its frame (a frame's 5 bytes ahead of a message's).
  const own = (bytes: Uint8Array) => bytes.buffer.byteLength - bytes.length <= 5;
  // A leaf (a suggestion: its Timestamps are encoded in place), frozen and not.
  const frozen = deepFreeze(suggestion("g", false));
  expect(own(encodeMessage(SuggestionSchema, frozen))).toBe(true);
  expect(own(encodeFrame(SuggestionSchema, frozen))).toBe(true);
  expect(own(encodeFrame(SuggestionSchema, suggestion("h", false)))).toBe(false);
  // From its parts: the frozen list's bytes, its frame, and its frame again from the
  // bytes kept; a list that is not frozen but holds frozen parts is the pool's.
  const list = deepFreeze(
    create(ListSuggestionsResponseSchema, {
      open: [suggestion("i", false)],
      settled: [suggestion("j", true)],
    }),
  );
  expect(own(encodeFrame(ListSuggestionsResponseSchema, list))).toBe(true);
  expect(own(encodeMessage(ListSuggestionsResponseSchema, list))).toBe(true);
  expect(own(encodeFrame(ListSuggestionsResponseSchema, list))).toBe(true);
  const loose = create(ListSuggestionsResponseSchema, { open: [...list.open] });
  expect(own(encodeFrame(ListSuggestionsResponseSchema, loose))).toBe(false);
});
