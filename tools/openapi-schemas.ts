import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { getComments } from "@bufbuild/protoplugin";

/*
 * JSON Schemas (OpenAPI 3.1's dialect) of protobuf messages in their proto3 JSON form, as
 * Connect's JSON encoding writes and reads them: fields by their JSON (lowerCamel) names,
 * 64-bit integers as decimal strings, enums by their full value names, bytes as base64,
 * and the well-known types in their own JSON forms (a Timestamp is an RFC 3339 string).
 */

/** A JSON Schema object. */
export type Schema = { [key: string]: unknown };

/** Where a schema of a named type lives in the document. */
export function refOf(typeName: string): Schema {
  return { $ref: `#/components/schemas/${typeName}` };
}

/** The JSON forms of the well-known types, which are not objects of their fields. */
const WELL_KNOWN: Record<string, Schema> = {
  "google.protobuf.Timestamp": {
    type: "string",
    format: "date-time",
    description: "An RFC 3339 date-time in UTC, such as 2026-01-02T15:04:05.123Z.",
  },
  "google.protobuf.Duration": {
    type: "string",
    pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$",
    description: "Seconds with up to 9 fractional digits, suffixed with s, such as 1.5s.",
  },
  "google.protobuf.Empty": { type: "object", additionalProperties: false },
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.Value": {},
  "google.protobuf.ListValue": { type: "array" },
  "google.protobuf.FieldMask": { type: "string", description: "Paths in lowerCamel, by commas." },
  "google.protobuf.Any": {
    type: "object",
    properties: { "@type": { type: "string" } },
    required: ["@type"],
  },
  "google.protobuf.StringValue": { type: "string" },
  "google.protobuf.BytesValue": { type: "string", contentEncoding: "base64" },
  "google.protobuf.BoolValue": { type: "boolean" },
  "google.protobuf.Int32Value": { type: "integer", format: "int32" },
  "google.protobuf.UInt32Value": { type: "integer", format: "int64", minimum: 0 },
  "google.protobuf.Int64Value": { type: "string", format: "int64", pattern: "^-?[0-9]+$" },
  "google.protobuf.UInt64Value": { type: "string", format: "int64", pattern: "^[0-9]+$" },
  "google.protobuf.FloatValue": { type: "number", format: "float" },
  "google.protobuf.DoubleValue": { type: "number", format: "double" },
};

/** The JSON form of a scalar: 64-bit integers are strings, so no precision is lost. */
function scalarSchema(type: ScalarType): Schema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int64", minimum: 0, maximum: 4294967295 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64", pattern: "^-?[0-9]+$" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "int64", pattern: "^[0-9]+$" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
  }
}

/** The text of a descriptor's leading comment, trimmed, or undefined. */
export function commentOf(desc: Parameters<typeof getComments>[0]): string | undefined {
  // Each line of a `//` comment keeps the space after the slashes.
  const text = getComments(desc)
    .leading?.split("\n")
    .map((line) => line.replace(/^ /, "").trimEnd())
    .join("\n")
    .trim();
  return text === undefined || text === "" ? undefined : text;
}

/** An enum: the names of its values, as proto3 JSON writes them. */
export function enumSchema(desc: DescEnum): Schema {
  const description = commentOf(desc);
  return {
    type: "string",
    enum: desc.values.map((v) => v.name),
    ...(description === undefined ? {} : { description }),
  };
}

/** What a message or enum field references: the schema of a named type. */
type Named =
  | { readonly kind: "message"; readonly desc: DescMessage }
  | {
      readonly kind: "enum";
      readonly desc: DescEnum;
    };

/** A field's value schema; `need` is told each named type it references. */
function valueSchema(field: DescField, need: (named: Named) => void): Schema {
  const message = (desc: DescMessage): Schema => {
    need({ kind: "message", desc });
    return refOf(desc.typeName);
  };
  const enumRef = (desc: DescEnum): Schema => {
    need({ kind: "enum", desc });
    return refOf(desc.typeName);
  };
  switch (field.fieldKind) {
    case "scalar":
      return scalarSchema(field.scalar);
    case "enum":
      return enumRef(field.enum);
    case "message":
      return message(field.message);
    case "list": {
      const items =
        field.listKind === "scalar"
          ? scalarSchema(field.scalar)
          : field.listKind === "enum"
            ? enumRef(field.enum)
            : message(field.message);
      return { type: "array", items };
    }
    case "map": {
      const values =
        field.mapKind === "scalar"
          ? scalarSchema(field.scalar)
          : field.mapKind === "enum"
            ? enumRef(field.enum)
            : message(field.message);
      return { type: "object", additionalProperties: values };
    }
  }
}

/**
 * A message: an object of its fields by JSON name, each described by its comment. Fields
 * of a oneof are plain properties of which at most one is set, as proto3 JSON writes them.
 */
export function messageSchema(desc: DescMessage, need: (named: Named) => void): Schema {
  const known = WELL_KNOWN[desc.typeName];
  if (known !== undefined) return known;
  const properties: Record<string, Schema> = {};
  for (const field of desc.fields) {
    const schema = valueSchema(field, need);
    const notes = [commentOf(field)];
    if (field.oneof !== undefined) {
      const others = field.oneof.fields.filter((f) => f !== field).map((f) => f.jsonName);
      notes.push(
        `One of \`${field.oneof.name}\`: set at most one of this and ${others.join(", ")}.`,
      );
    }
    const description = notes.filter((n) => n !== undefined).join("\n\n");
    properties[field.jsonName] = description === "" ? schema : { ...schema, description };
  }
  const description = commentOf(desc);
  return {
    type: "object",
    properties,
    ...(description === undefined ? {} : { description }),
  };
}

/** Every schema `roots` need, by type name, in a stable order (sorted by name). */
export function schemasOf(roots: readonly DescMessage[]): Record<string, Schema> {
  const out = new Map<string, Schema>();
  const pending: Named[] = roots.map((desc) => ({ kind: "message", desc }));
  while (pending.length > 0) {
    const next = pending.pop() as Named;
    if (out.has(next.desc.typeName)) continue;
    out.set(
      next.desc.typeName,
      next.kind === "enum"
        ? enumSchema(next.desc)
        : messageSchema(next.desc, (n) => pending.push(n)),
    );
  }
  return Object.fromEntries([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
