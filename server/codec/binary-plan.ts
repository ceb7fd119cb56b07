import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";

/*
 * Which messages binary-encoding.ts writes itself, and how: a plan per message type, its
 * fields in number order with the kind of each, made from protobuf-es's descriptors. A
 * type with a field of another kind, or that reaches such a type, has none (`null`): its
 * messages are protobuf-es's `toBinary`'s.
 */

/** How a field is written. */
export const Kind = {
  String: 0,
  Int32: 1,
  Uint32: 2,
  Int64: 3,
  Bool: 4,
  Message: 5,
  Messages: 6,
  OneofMessage: 7,
} as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

export interface FieldPlan {
  readonly kind: Kind;
  readonly localName: string;
  /** The field's tag (number and wire type) as a varint's value. */
  readonly tag: number;
  /** The oneof's local name, for a member of one. */
  readonly oneof: string;
  /** The plan of the message type, for message kinds (filled after compiling). */
  sub: Plan | null;
  readonly subSchema: DescMessage | undefined;
}

export interface Plan {
  readonly typeName: string;
  readonly fields: readonly FieldPlan[];
}

/** Compiled plans; `null` for a schema this writer leaves to `toBinary`. */
// A side table of plans, derived from each (immutable) schema only.
const plans = new WeakMap<DescMessage, Plan | null>();

const WIRE_VARINT = 0;
const WIRE_DELIMITED = 2;

function kindOf(f: DescField): Kind | undefined {
  if (f.fieldKind === "message") {
    if (f.delimitedEncoding) return undefined;
    return f.oneof === undefined ? Kind.Message : Kind.OneofMessage;
  }
  if (f.fieldKind === "list") {
    return f.listKind === "message" && !f.delimitedEncoding ? Kind.Messages : undefined;
  }
  if (f.oneof !== undefined || f.presence !== IMPLICIT) return undefined;
  // toBinary skips an enum's first value, which proto3 makes 0.
  if (f.fieldKind === "enum") return f.enum.values[0]?.number === 0 ? Kind.Int32 : undefined;
  if (f.fieldKind !== "scalar") return undefined;
  switch (f.scalar) {
    case ScalarType.STRING:
      return Kind.String;
    case ScalarType.INT32:
      return Kind.Int32;
    case ScalarType.UINT32:
      return Kind.Uint32;
    case ScalarType.INT64:
      return Kind.Int64;
    case ScalarType.BOOL:
      return Kind.Bool;
    default:
      return undefined;
  }
}

/** `FeatureSet.FieldPresence.IMPLICIT`, as protobuf-es numbers it. */
const IMPLICIT = 2;

/** A schema's fields in number order, or null when one is of a kind left to toBinary. */
function fieldPlans(schema: DescMessage): FieldPlan[] | null {
  const fields: FieldPlan[] = [];
  for (const f of [...schema.fields].sort((a, b) => a.number - b.number)) {
    const kind = kindOf(f);
    if (kind === undefined) return null;
    const message = f.fieldKind === "message" || f.fieldKind === "list" ? f.message : undefined;
    fields.push({
      kind,
      localName: f.localName,
      tag:
        (f.number << 3) |
        (kind === Kind.String || message !== undefined ? WIRE_DELIMITED : WIRE_VARINT),
      oneof: f.oneof?.localName ?? "",
      sub: null,
      subSchema: message,
    });
  }
  return fields;
}

/**
 * A schema's plan, made with the plans of every message type it reaches: a type is
 * written here only when all of them are (a recursive type included), so each is
 * decided once the whole graph is known, never from a plan still being made.
 */
export function planOf(schema: DescMessage): Plan | null {
  const known = plans.get(schema);
  if (known !== undefined) return known;
  const graph = new Map<DescMessage, FieldPlan[] | null>();
  const todo = [schema];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    if (graph.has(next) || plans.has(next)) continue;
    const fields = fieldPlans(next);
    graph.set(next, fields);
    for (const f of fields ?? []) if (f.subSchema !== undefined) todo.push(f.subSchema);
  }
  const written = (sub: DescMessage) => (graph.has(sub) ? graph.get(sub) : plans.get(sub)) !== null;
  for (let changed = true; changed; ) {
    changed = false;
    for (const [type, fields] of graph) {
      if (fields?.some((f) => f.subSchema !== undefined && !written(f.subSchema))) {
        graph.set(type, null);
        changed = true;
      }
    }
  }
  for (const [type, fields] of graph) {
    plans.set(type, fields === null ? null : { typeName: type.typeName, fields });
  }
  for (const fields of graph.values()) {
    for (const f of fields ?? []) {
      if (f.subSchema !== undefined) f.sub = plans.get(f.subSchema) ?? null;
    }
  }
  return plans.get(schema) ?? null;
}
