import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { toBinary } from "@bufbuild/protobuf";

/*
 * Frozen messages encoded once. A frozen message (frozen in depth, as handlers that share
 * one response among many calls make it) cannot change, so its bytes can be reused by
 * every call that answers it, and by every frozen message that holds it: a response
 * of ten suggestions of which nine are the objects of the previous response encodes
 * one. Keyed weakly, so bytes live as long as their message; the transport knows
 * nothing of what the messages are.
 */

const bytesOf = new WeakMap<object, Uint8Array>();
const frames = new WeakMap<object, Buffer>();

/**
 * The message fields of a schema that are encoded from their parts (no oneof, no
 * groups), and whether they are all its fields (then a message with no unknown fields
 * has nothing else to encode).
 */
interface Parts {
  readonly fields: readonly DescField[];
  readonly all: boolean;
}
const partsOf = new WeakMap<DescMessage, Parts>();

function messageFields(schema: DescMessage): Parts {
  let parts = partsOf.get(schema);
  if (parts === undefined) {
    const fields = schema.fields.filter(
      (f) =>
        (f.fieldKind === "message" && f.oneof === undefined && !f.delimitedEncoding) ||
        (f.fieldKind === "list" && f.listKind === "message" && !f.delimitedEncoding),
    );
    parts = { fields, all: fields.length === schema.fields.length };
    partsOf.set(schema, parts);
  }
  return parts;
}

function varint(value: number, out: number[]): void {
  let v = value;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
}

/** One length-delimited field: tag, length, bytes. */
function field(number: number, bytes: Uint8Array, parts: Uint8Array[]): void {
  const head: number[] = [];
  varint((number << 3) | 2, head);
  varint(bytes.length, head);
  parts.push(Buffer.from(head), bytes);
}

/**
 * A message's binary encoding; a frozen one's is kept and reused, and frozen
 * sub-messages (of any message) are encoded once, on their own. The bytes are a valid encoding of the
 * same message: its other fields first, then each message field in declaration order.
 */
export function encodeMessage(schema: DescMessage, message: Message): Uint8Array {
  const frozen = Object.isFrozen(message);
  const known = frozen ? bytesOf.get(message) : undefined;
  if (known !== undefined) return known;
  const { fields, all } = messageFields(schema);
  let bytes: Uint8Array;
  if (fields.length === 0 || !(frozen || holdsFrozen(message, fields))) {
    bytes = toBinary(schema, message);
  } else {
    const record = message as unknown as Record<string, unknown>;
    const parts: Uint8Array[] = [];
    if (!all || record.$unknown !== undefined) {
      const rest: Record<string, unknown> = { ...record };
      for (const f of fields) rest[f.localName] = f.fieldKind === "list" ? [] : undefined;
      parts.push(toBinary(schema, rest as unknown as Message));
    }
    for (const f of fields) {
      const sub = f.message as DescMessage;
      const value = record[f.localName];
      const values = (
        f.fieldKind === "list" ? value : value === undefined ? [] : [value]
      ) as Message[];
      for (const v of values) field(f.number, encodeMessage(sub, v), parts);
    }
    bytes = Buffer.concat(parts);
  }
  if (frozen) bytesOf.set(message, bytes);
  return bytes;
}

/** Whether a message field of a (not frozen) message holds a frozen message. */
function holdsFrozen(message: Message, fields: readonly DescField[]): boolean {
  const record = message as unknown as Record<string, unknown>;
  for (const f of fields) {
    const value = record[f.localName];
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined && Object.isFrozen(first)) return true;
  }
  return false;
}

/** The frame encoded for this frozen message earlier, if any. */
export function encodedFrame(message: object): Buffer | undefined {
  return frames.get(message);
}

/** Keeps the frame of a message, if the message is frozen (else it could change). */
export function keepFrame(message: object, frame: Buffer): void {
  if (Object.isFrozen(message)) frames.set(message, frame);
}
