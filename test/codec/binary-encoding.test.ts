import {
  create,
  type DescField,
  type DescMessage,
  fromBinary,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";
import fc from "fast-check";
import { expect, test } from "vitest";
import * as errorDetails from "../../gen/google/rpc/error_details_pb.js";
import * as health from "../../gen/grpc/health/v1/health_pb.js";
import * as reflection from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as chatHost from "../../gen/oda/suggest/v1/chat_host_pb.js";
import * as suggestion from "../../gen/oda/suggest/v1/suggestion_pb.js";
import * as service from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { encodeBinary, writesItself } from "../../server/codec/binary-encoding.js";

/** Every message schema of the generated code, with the ones their fields name. */
function allSchemas(): DescMessage[] {
  const found = new Set<DescMessage>();
  const visit = (schema: DescMessage) => {
    if (found.has(schema)) return;
    found.add(schema);
    for (const f of schema.fields) {
      if (f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message")) {
        visit(f.message as DescMessage);
      }
      if (f.fieldKind === "map" && f.mapKind === "message") visit(f.message);
    }
  };
  for (const mod of [errorDetails, health, reflection, chatHost, suggestion, service]) {
    for (const value of Object.values(mod)) {
      if ((value as { kind?: string }).kind === "message") visit(value as DescMessage);
    }
  }
  return [...found];
}

const STRINGS = [
  "",
  "a",
  "Add a retry to the uploader",
  "x".repeat(127),
  "x".repeat(128),
  "y".repeat(300),
  "é",
  "中文の題",
  "Émoji 🎉 title",
  "😀".repeat(70),
  "lone \uD800 surrogate",
  "\uDC00",
  `${"a".repeat(126)}é`,
  "z".repeat(20_000),
];

/** A random value generator by descriptor, from one seed (depth-limited). */
function randomInit(schema: DescMessage, rand: () => number, depth: number): object {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
  const int32 = () => pick([0, 1, -1, 127, 128, 2 ** 31 - 1, -(2 ** 31), 300, -300]);
  const scalar = (type: ScalarType): unknown => {
    switch (type) {
      case ScalarType.STRING:
        return pick(STRINGS);
      case ScalarType.BOOL:
        return rand() < 0.5;
      case ScalarType.INT32:
      case ScalarType.SINT32:
      case ScalarType.SFIXED32:
        return int32();
      case ScalarType.UINT32:
      case ScalarType.FIXED32:
        return pick([0, 1, 127, 128, 2 ** 32 - 1, 2 ** 31]);
      case ScalarType.INT64:
      case ScalarType.SINT64:
      case ScalarType.SFIXED64:
        return pick([0n, 1n, -1n, 1_700_000_000n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 35n]);
      case ScalarType.UINT64:
      case ScalarType.FIXED64:
        return pick([0n, 1n, 2n ** 64n - 1n, 2n ** 40n]);
      case ScalarType.FLOAT:
      case ScalarType.DOUBLE:
        return pick([0, 1.5, -2.25]);
      case ScalarType.BYTES:
        return pick([new Uint8Array(0), new Uint8Array([1, 2, 3]), new Uint8Array(200)]);
    }
  };
  const value = (f: DescField): unknown => {
    switch (f.fieldKind) {
      case "scalar":
        return scalar(f.scalar);
      case "enum":
        return pick([...f.enum.values.map((v) => v.number), -1, 99]);
      case "message":
        return depth > 3 ? undefined : randomInit(f.message, rand, depth + 1);
      case "list": {
        const n = depth > 3 ? 0 : pick([0, 1, 2, 3]);
        return Array.from({ length: n }, () =>
          f.listKind === "message"
            ? randomInit(f.message, rand, depth + 1)
            : f.listKind === "enum"
              ? pick(f.enum.values.map((v) => v.number))
              : scalar(f.scalar),
        );
      }
      case "map": {
        const entries: [string, unknown][] = [];
        for (let i = pick([0, 1, 2]); i > 0; i--) {
          entries.push([
            `k${i}`,
            f.mapKind === "message"
              ? depth > 3
                ? {}
                : randomInit(f.message, rand, depth + 1)
              : f.mapKind === "enum"
                ? pick(f.enum.values.map((v) => v.number))
                : scalar(f.scalar),
          ]);
        }
        return Object.fromEntries(entries);
      }
    }
  };
  const init: Record<string, unknown> = {};
  for (const f of schema.fields) {
    if (f.oneof !== undefined || rand() < 0.25) continue;
    init[f.localName] = value(f);
  }
  for (const oneof of schema.oneofs) {
    if (rand() < 0.3) continue;
    const f = pick(oneof.fields);
    init[oneof.localName] = { case: f.localName, value: value(f) ?? {} };
  }
  const message = create(schema, init as never);
  if (rand() < 0.2) {
    message.$unknown = [
      { no: 900, wireType: 0, data: new Uint8Array([42]) },
      { no: 901, wireType: 2, data: new Uint8Array([2, 104, 105]) },
    ];
  }
  return message;
}

/** A small PRNG (mulberry32): the same seed, the same message. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const schemas = allSchemas();

test("every generated message is encoded with toBinary's bytes, after any headroom", () => {
  expect(schemas.length).toBeGreaterThan(40);
  fc.assert(
    fc.property(
      fc.integer(),
      fc.constantFrom(...schemas),
      fc.constantFrom(0, 5),
      (seed, schema, headroom) => {
        const message = randomInit(schema, prng(seed), 0) as never;
        const expected = Buffer.from(toBinary(schema, message));
        const out = encodeBinary(schema, message, headroom);
        expect(out.subarray(headroom).toString("hex")).toBe(expected.toString("hex"));
        expect(out.length).toBe(headroom + expected.length);
      },
    ),
    { numRuns: 3000 },
  );
});

test("the service's hot messages are written by the writer itself, the rest by toBinary", () => {
  for (const schema of [
    suggestion.SuggestionSchema,
    service.SuggestTaskResponseSchema,
    service.ListSuggestionsResponseSchema,
    service.DismissSuggestionResponseSchema,
    service.StartSuggestionResponseSchema,
    service.GetSuggestionResponseSchema,
    chatHost.ChatSchema,
    chatHost.SessionSchema,
    chatHost.ChatMessageSchema,
  ]) {
    expect([schema.typeName, writesItself(schema)]).toEqual([schema.typeName, true]);
  }
  // A map (ErrorInfo's metadata) and bytes are toBinary's.
  expect(writesItself(errorDetails.ErrorInfoSchema)).toBe(false);
  const info = create(errorDetails.ErrorInfoSchema, { reason: "R", metadata: { a: "b" } });
  expect(
    fromBinary(errorDetails.ErrorInfoSchema, encodeBinary(errorDetails.ErrorInfoSchema, info)),
  ).toEqual(info);
});

test("long and nested messages: length prefixes of two and three bytes, and a grown buffer", () => {
  const brief = "b".repeat(70_000);
  const message = create(service.ListSuggestionsResponseSchema, {
    open: [
      { id: "1", brief },
      { id: "2", title: "é".repeat(100) },
    ],
  });
  const out = encodeBinary(service.ListSuggestionsResponseSchema, message);
  expect(out.equals(Buffer.from(toBinary(service.ListSuggestionsResponseSchema, message)))).toBe(
    true,
  );
  // And the next, short message is not disturbed by what the long one left.
  const short = create(suggestion.SuggestionSchema, { id: "x" });
  expect([...encodeBinary(suggestion.SuggestionSchema, short)]).toEqual([10, 1, 120]);
});

test("kept bytes have a buffer of their own; others are a slice of Node's pool", () => {
  const message = create(suggestion.SuggestionSchema, { id: "x", title: "t".repeat(200) });
  const kept = encodeBinary(suggestion.SuggestionSchema, message, 5, true);
  expect(kept.buffer.byteLength).toBe(kept.length);
  const pooled = encodeBinary(suggestion.SuggestionSchema, message, 5);
  expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length);
  expect(pooled.subarray(5).equals(kept.subarray(5))).toBe(true);
});

test("a value of another type is toBinary's to coerce or refuse, and the next call is whole", () => {
  const schema = suggestion.SuggestionSchema;
  const coerced = create(schema, { id: "x" });
  (coerced as unknown as { title: unknown }).title = 12;
  expect(encodeBinary(schema, coerced).equals(Buffer.from(toBinary(schema, coerced)))).toBe(true);
  const refused = create(schema, { id: "x" });
  (refused as unknown as { state: unknown }).state = "open";
  let error: unknown;
  try {
    toBinary(schema, refused);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(Error);
  expect(() => encodeBinary(schema, refused)).toThrow(error as Error);
  const foreign = create(schema, { id: "x" });
  (foreign as unknown as { offeredAt: unknown }).offeredAt = create(schema, { id: "in" });
  expect(() => encodeBinary(schema, foreign)).toThrow(/ForeignFieldError|cannot use/);
  const good = create(schema, { id: "y" });
  expect([...encodeBinary(schema, good)]).toEqual([10, 1, 121]);
});
