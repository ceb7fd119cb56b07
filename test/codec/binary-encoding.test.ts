import {
  create,
  createFileRegistry,
  type DescField,
  type DescMessage,
  fromBinary,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";
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

/** encodeBinary answers what toBinary answers: the same bytes, or the same error. */
function expectSameAsToBinary(schema: DescMessage, message: unknown): void {
  let expected: string | Error;
  try {
    expected = Buffer.from(toBinary(schema, message as never)).toString("hex");
  } catch (err) {
    expected = err as Error;
  }
  if (typeof expected === "string") {
    expect(encodeBinary(schema, message as never).toString("hex")).toBe(expected);
  } else {
    expect(() => encodeBinary(schema, message as never)).toThrow(expected.message);
  }
}

test("long and nested messages: length prefixes of two and three bytes, and a grown buffer", () => {
  const message = create(service.ListSuggestionsResponseSchema, {
    open: [
      { id: "1", brief: "b".repeat(70_000) },
      { id: "2", title: "é".repeat(100) },
    ],
  });
  expectSameAsToBinary(service.ListSuggestionsResponseSchema, message);
  // Megabytes grow the buffer several times, and leave it small again after.
  const huge = create(suggestion.SuggestionSchema, { id: "h", brief: "h".repeat(3_000_000) });
  expectSameAsToBinary(suggestion.SuggestionSchema, huge);
  // A nested message that ends at a (fresh) buffer's end, where its length prefix of
  // two bytes moves it one byte on: each length after a megabyte message.
  for (let length = 16_360; length < 16_400; length++) {
    encodeBinary(suggestion.SuggestionSchema, huge);
    const list = create(service.ListSuggestionsResponseSchema, {
      open: [{ brief: "n".repeat(length) }],
    });
    expectSameAsToBinary(service.ListSuggestionsResponseSchema, list);
  }
  // And the next, short message is not disturbed by what the long ones left.
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
  const set = (field: string, value: unknown) => {
    const message = create(schema, { id: "x", offeredAt: { seconds: 5n } });
    (message as unknown as Record<string, unknown>)[field] = value;
    return message;
  };
  const cases: unknown[] = [
    set("title", 12),
    set("state", "open"),
    set("state", 2 ** 31),
    set("state", 1.5),
    set("offeredAt", null),
    set("offeredAt", create(schema, { id: "in" })),
    set("offeredAt", { $typeName: "other.Stamp", seconds: 5n, nanos: 1 }),
    set("offeredAt", { $typeName: "google.protobuf.Timestamp", seconds: 2n ** 63n, nanos: 0 }),
    set("offeredAt", { $typeName: "google.protobuf.Timestamp", seconds: "12", nanos: 0 }),
    set("offeredAt", { $typeName: "google.protobuf.Timestamp", seconds: 0n, nanos: -1 }),
    set("$unknown", [{ no: 9, wireType: 0, data: [1] }]),
    set("$unknown", [{ no: -1, wireType: 0, data: new Uint8Array([1]) }]),
    set("$typeName", "oda.suggest.v1.Other"),
  ];
  for (const message of cases) expectSameAsToBinary(schema, message);
  const limit = create(suggestion.SuggestTaskRefusalSchema, { got: 1 });
  for (const got of [-1, 2 ** 32, 2 ** 32 - 1, true]) {
    (limit as unknown as { got: unknown }).got = got;
    expectSameAsToBinary(suggestion.SuggestTaskRefusalSchema, limit);
  }
  // A oneof missing altogether, and a message field on the prototype only, not its own.
  const error = create(suggestion.SuggestionErrorSchema, {
    payload: { case: "notFound", value: { suggestionId: "s" } },
  });
  delete (error as unknown as { payload?: unknown }).payload;
  expectSameAsToBinary(suggestion.SuggestionErrorSchema, error);
  const inherited = Object.create(create(schema, { id: "x", offeredAt: { seconds: 1n } }));
  inherited.$typeName = schema.typeName;
  inherited.id = "y";
  expectSameAsToBinary(schema, inherited);
  const good = create(schema, { id: "y" });
  expect([...encodeBinary(schema, good)]).toEqual([10, 1, 121]);
});

test("a getter that encodes another message while one is written: both whole", () => {
  const schema = suggestion.SuggestionSchema;
  const outer = create(schema, { id: "outer", title: "t" });
  let inner: Buffer | undefined;
  Object.defineProperty(outer, "tldr", {
    enumerable: true,
    get() {
      inner = encodeBinary(schema, create(schema, { id: "inner" }));
      return "tl";
    },
  });
  expectSameAsToBinary(schema, outer);
  expect(inner?.toString("hex")).toBe(
    Buffer.from(toBinary(schema, create(schema, { id: "inner" }))).toString("hex"),
  );
});

/** Three proto3 types of a file of their own: A { B b = 1; C c = 2 }, B { A a = 1 }, C. */
function recursiveTypes(cField: "double" | "string") {
  const message = (name: string, type: FieldDescriptorProto_Type, typeName?: string) => ({
    name: name.toLowerCase(),
    number: 1,
    label: FieldDescriptorProto_Label.OPTIONAL,
    type,
    ...(typeName === undefined ? {} : { typeName }),
    jsonName: name.toLowerCase(),
  });
  const file = create(FileDescriptorProtoSchema, {
    name: `recursive-${cField}.proto`,
    package: `r${cField}`,
    syntax: "proto3",
    messageType: [
      {
        name: "A",
        field: [
          message("B", FieldDescriptorProto_Type.MESSAGE, `.r${cField}.B`),
          { ...message("C", FieldDescriptorProto_Type.MESSAGE, `.r${cField}.C`), number: 2 },
        ],
      },
      { name: "B", field: [message("A", FieldDescriptorProto_Type.MESSAGE, `.r${cField}.A`)] },
      {
        name: "C",
        field: [
          message(
            "D",
            cField === "double"
              ? FieldDescriptorProto_Type.DOUBLE
              : FieldDescriptorProto_Type.STRING,
          ),
        ],
      },
    ],
  });
  const registry = createFileRegistry(file, () => undefined);
  const get = (name: string) => registry.getMessage(`r${cField}.${name}`) as DescMessage;
  return { A: get("A"), B: get("B"), C: get("C") };
}

test("recursive types: written here only when every type they reach is, whichever is first", () => {
  for (const first of ["A", "B"] as const) {
    // C holds a double, which toBinary writes: so A and B, which reach C, are too.
    const t = recursiveTypes("double");
    expect(writesItself(t[first])).toBe(false);
    expect([writesItself(t.A), writesItself(t.B), writesItself(t.C)]).toEqual([
      false,
      false,
      false,
    ]);
    const b = create(t.B, { a: { b: { a: { c: { d: 1.5 } } }, c: { d: 2 } } } as never);
    expectSameAsToBinary(t.B, b);
  }
  const t = recursiveTypes("string");
  expect([writesItself(t.B), writesItself(t.A), writesItself(t.C)]).toEqual([true, true, true]);
  const b = create(t.B, { a: { b: { a: { c: { d: "deep" } } }, c: { d: "x" } } } as never);
  expectSameAsToBinary(t.B, b);
});
