import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import {
  BinaryReader,
  configureTextEncoding,
  getTextEncoding,
  WireType,
} from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

/**
 * UTF-8 encoding of a string as protobuf-es's binary writer asks for it, one call per
 * string field written. `Buffer.from` gives the same bytes as `TextEncoder.encode` (a
 * lone surrogate becomes U+FFFD in both) and, for short strings, slices Node's pool
 * instead of allocating an ArrayBuffer of its own: about 85 against 320 ns a string
 * here, and a SuggestTask response encodes in half the time. The writer only copies
 * the bytes into its output, so the slice is never kept nor written to.
 */
export function encodeUtf8(text: string): Uint8Array<ArrayBuffer> {
  // Node's pool and its own allocations are ArrayBuffers, never shared ones.
  return Buffer.from(text, "utf8") as Uint8Array<ArrayBuffer>;
}

/**
 * Start-up step: protobuf-es encodes text with `encodeUtf8` above (its
 * `configureTextEncoding`, process-wide). Decoding and checking stay protobuf-es's own,
 * unchanged: a request's text that is not valid UTF-8 is found by `refusalOf` on the
 * request's bytes, never by changing how protobuf-es decodes, so clients in the same
 * process (a Connect client, the remote chat host's client) decode as protobuf-es does.
 * Idempotent (protobuf-es's setting says whether it is done); called by
 * `startSuggestServer` (server/server.ts). Pinned by test/transport/text-encoding.test.ts
 * and test/e2e/utf8-scope.test.ts.
 */
export function configureProtobufText(): void {
  const base = getTextEncoding();
  if (base.encodeUtf8 === encodeUtf8) return;
  configureTextEncoding({ encodeUtf8, checkUtf8: base.checkUtf8, decodeUtf8: base.decodeUtf8 });
}

/**
 * Why a request message's `bytes` did not parse as `schema` (protobuf-es threw
 * `failure`): INVALID_ARGUMENT `<field> is not valid UTF-8` naming the first text field
 * whose bytes are not valid UTF-8 (protobuf-es refuses such text in proto3 without
 * naming it), else `parse binary: <why>`. Pinned by test/e2e/bad-input.test.ts and
 * test/e2e/bad-input-encodings.test.ts.
 */
export function refusalOf(schema: DescMessage, bytes: Uint8Array, failure: unknown): ConnectError {
  let cause = failure;
  try {
    const path = invalidTextPath(schema, bytes);
    if (path !== undefined) {
      return new ConnectError(`${path || "request"} is not valid UTF-8`, Code.InvalidArgument);
    }
  } catch (err) {
    // The message is malformed apart from its text: that is what is answered.
    cause = err;
  }
  return new ConnectError(
    `parse binary: ${cause instanceof Error ? cause.message : String(cause)}`,
    Code.InvalidArgument,
  );
}

/** Strict UTF-8: invalid bytes throw instead of becoming U+FFFD. */
const STRICT = new TextDecoder("utf-8", { fatal: true });
/** How a map's text key is named in a path. */
const LENIENT = new TextDecoder("utf-8");

function isUtf8(bytes: Uint8Array): boolean {
  try {
    STRICT.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** protobuf-es's own limit on nested messages. */
const RECURSION_LIMIT = 100;

/**
 * The path of the first text field in a `schema` message's `bytes` that is not valid
 * UTF-8, as the field reads in the decoded message (`args.title`, `tags[2]`,
 * `labels.key`, a oneof member as `kind.value`); undefined when there is none. Fields
 * `schema` does not know are skipped, as requests drop them. Throws when the bytes are
 * not a message.
 */
export function invalidTextPath(
  schema: DescMessage,
  bytes: Uint8Array,
  depth = 0,
): string | undefined {
  if (depth > RECURSION_LIMIT) throw new Error("recursion limit reached");
  const reader = new BinaryReader(bytes);
  const seen = new Map<number, number>();
  let found: string | undefined;
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    const field = schema.fields.find((f) => f.number === no);
    if (field === undefined || wireType !== WireType.LengthDelimited) {
      reader.skip(wireType, no);
      continue;
    }
    const index = seen.get(no) ?? 0;
    seen.set(no, index + 1);
    const path = fieldPath(field, reader.bytes(), index, depth);
    // The first is kept, and the rest of the message still read: malformed bytes after
    // it make the message one that does not parse.
    if (found === undefined) found = path;
  }
  return found;
}

/** The path within one length-delimited occurrence of `field`, when its text is bad. */
function fieldPath(
  field: DescField,
  bytes: Uint8Array,
  index: number,
  depth: number,
): string | undefined {
  const name = field.oneof === undefined ? field.localName : `${field.oneof.localName}.value`;
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.STRING && !isUtf8(bytes) ? name : undefined;
    case "message":
      return within(name, invalidTextPath(field.message, bytes, depth + 1));
    case "list":
      if (field.listKind === "message") {
        return within(`${name}[${index}]`, invalidTextPath(field.message, bytes, depth + 1));
      }
      return field.scalar === ScalarType.STRING && !isUtf8(bytes) ? `${name}[${index}]` : undefined;
    case "map":
      return mapEntryPath(field, name, bytes, depth);
    default:
      return undefined;
  }
}

/** The path within one map entry (key 1, value 2) of `field`, when its text is bad. */
function mapEntryPath(
  field: DescField & { fieldKind: "map" },
  name: string,
  bytes: Uint8Array,
  depth: number,
): string | undefined {
  const reader = new BinaryReader(bytes);
  let key = "";
  let value: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    if (no === 1 && field.mapKey === ScalarType.STRING && wireType === WireType.LengthDelimited) {
      const text = reader.bytes();
      if (!isUtf8(text)) return name;
      key = LENIENT.decode(text);
    } else if (no === 1) {
      key = String(readKey(reader, field.mapKey, wireType));
    } else if (no === 2 && wireType === WireType.LengthDelimited) {
      value = reader.bytes();
    } else {
      reader.skip(wireType, no);
    }
  }
  if (value === undefined) return undefined;
  const path = `${name}.${key}`;
  if (field.mapKind === "message") {
    return within(path, invalidTextPath(field.message, value, depth + 1));
  }
  return field.mapKind === "scalar" && field.scalar === ScalarType.STRING && !isUtf8(value)
    ? path
    : undefined;
}

/** A map's key other than text, as it reads in the decoded message's object. */
function readKey(reader: BinaryReader, type: ScalarType, wireType: WireType): unknown {
  switch (type) {
    case ScalarType.INT32:
      return reader.int32();
    case ScalarType.UINT32:
      return reader.uint32();
    case ScalarType.SINT32:
      return reader.sint32();
    case ScalarType.FIXED32:
      return reader.fixed32();
    case ScalarType.SFIXED32:
      return reader.sfixed32();
    case ScalarType.INT64:
      return reader.int64();
    case ScalarType.UINT64:
      return reader.uint64();
    case ScalarType.SINT64:
      return reader.sint64();
    case ScalarType.FIXED64:
      return reader.fixed64();
    case ScalarType.SFIXED64:
      return reader.sfixed64();
    case ScalarType.BOOL:
      return reader.bool();
    default:
      reader.skip(wireType);
      return "";
  }
}

/** `inner` (a path within the message at `path`) from the outer message. */
function within(path: string, inner: string | undefined): string | undefined {
  if (inner === undefined) return undefined;
  return inner === "" ? path : `${path}.${inner}`;
}
