import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { allocate, copied, encodeBinary, varintSize } from "../codec/binary-encoding.js";

/*
 * Frozen messages encoded once. A frozen message (frozen in depth, as handlers that share
 * one response among many calls make it) cannot change, so its bytes can be reused by
 * every call that answers it, and by every frozen message that holds it: a response
 * of ten suggestions of which nine are the objects of the previous response encodes
 * one. Keyed weakly, so bytes live as long as their message; the transport knows
 * nothing of what the messages are.
 */

// Side tables of bytes and frames, derived from each frozen message only.
const bytesOf = new WeakMap<object, Uint8Array>();
const frames = new WeakMap<object, Buffer>();

/**
 * The message fields of a schema that are encoded from their parts (no oneof, no
 * groups, and of a type that holds message fields itself), and whether they are all its
 * fields (then a message with no unknown fields has nothing else to encode). A leaf,
 * such as a suggestion's Timestamps, is cheaper to encode in place than apart: a
 * suggestion is one `toBinary`, where from its parts it was a copy of its other fields
 * and three.
 */
interface Parts {
  readonly fields: readonly DescField[];
  readonly all: boolean;
}
// A side table of each schema's parts, derived from the schema only.
const partsOf = new WeakMap<DescMessage, Parts>();

/** A message field, or a list of messages, in the length-delimited encoding. */
function holdsMessages(f: DescField): boolean {
  return (
    (f.fieldKind === "message" && f.oneof === undefined && !f.delimitedEncoding) ||
    (f.fieldKind === "list" && f.listKind === "message" && !f.delimitedEncoding)
  );
}

function messageFields(schema: DescMessage): Parts {
  let parts = partsOf.get(schema);
  if (parts === undefined) {
    const fields = schema.fields.filter(
      (f) => holdsMessages(f) && (f.message as DescMessage).fields.some(holdsMessages),
    );
    parts = { fields, all: fields.length === schema.fields.length };
    partsOf.set(schema, parts);
  }
  return parts;
}

/** Writes `value` as a varint at `at`; answers the offset after it. */
function writeVarint(out: Uint8Array, at: number, value: number): number {
  let v = value;
  let i = at;
  while (v > 0x7f) {
    out[i++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[i++] = v;
  return i;
}

/** A gRPC frame's head: a flags byte and the message's length (4 bytes, big-endian). */
const FRAME_HEAD = 5;

/**
 * A message's binary encoding; a frozen one's is kept and reused, and frozen
 * sub-messages (of any message) are encoded once, on their own. The bytes are a valid encoding of the
 * same message: its other fields first, then each message field in declaration order.
 */
export function encodeMessage(schema: DescMessage, message: Message): Uint8Array {
  return encodeAfter(schema, message, 0);
}

/**
 * A message's gRPC frame (uncompressed): `encodeMessage`'s bytes after the frame's
 * head, written in the same buffer when the message is encoded from its parts.
 */
export function encodeFrame(schema: DescMessage, message: Message): Buffer {
  return headed(encodeAfter(schema, message, FRAME_HEAD));
}

/**
 * Bytes encoded elsewhere in a gRPC frame: a copy after the frame's head, in a buffer of
 * its own when the frame is `kept` (see withHeadroom).
 */
export function frameBytes(bytes: Uint8Array, kept: boolean): Buffer {
  return headed(withHeadroom(bytes, FRAME_HEAD, kept));
}

/** Writes a frame's head (flags 0, the length of what follows) in its first bytes. */
function headed(frame: Uint8Array): Buffer {
  const out = Buffer.from(frame.buffer, frame.byteOffset, frame.length);
  out[0] = 0;
  out.writeUInt32BE(frame.length - FRAME_HEAD, 1);
  return out;
}

/** `bytes` after `headroom` bytes left free (`bytes` itself for none), as `copied` copies. */
function withHeadroom(bytes: Uint8Array, headroom: number, kept: boolean): Uint8Array {
  return headroom === 0 ? bytes : copied(bytes, headroom, kept);
}

/** `encodeMessage`'s bytes, after `headroom` free bytes in the same buffer. */
function encodeAfter(schema: DescMessage, message: Message, headroom: number): Uint8Array {
  const frozen = Object.isFrozen(message);
  const known = frozen ? bytesOf.get(message) : undefined;
  if (known !== undefined) return withHeadroom(known, headroom, true);
  const { fields, all } = messageFields(schema);
  let out: Uint8Array;
  if (fields.length === 0 || !(frozen || holdsFrozen(message, fields))) {
    out = encodeBinary(schema, message, headroom, frozen);
  } else {
    const record = message as unknown as Record<string, unknown>;
    let rest: Uint8Array | undefined;
    if (!all || record.$unknown !== undefined) {
      const others: Record<string, unknown> = { ...record };
      for (const f of fields) others[f.localName] = f.fieldKind === "list" ? [] : undefined;
      rest = encodeBinary(schema, others as unknown as Message);
    }
    // Each sub-message's tag and bytes, then one buffer of them all.
    const tags: number[] = [];
    const parts: Uint8Array[] = [];
    let size = rest?.length ?? 0;
    for (const f of fields) {
      const sub = f.message as DescMessage;
      const value = record[f.localName];
      const values = (
        f.fieldKind === "list" ? value : value === undefined ? [] : [value]
      ) as Message[];
      const tag = (f.number << 3) | 2;
      for (const v of values) {
        const bytes = encodeAfter(sub, v, 0);
        tags.push(tag);
        parts.push(bytes);
        size += varintSize(tag) + varintSize(bytes.length) + bytes.length;
      }
    }
    out = allocate(headroom + size, frozen);
    let at = headroom;
    if (rest !== undefined) {
      out.set(rest, at);
      at += rest.length;
    }
    for (let i = 0; i < parts.length; i++) {
      const bytes = parts[i] as Uint8Array;
      at = writeVarint(out, writeVarint(out, at, tags[i] as number), bytes.length);
      out.set(bytes, at);
      at += bytes.length;
    }
  }
  if (frozen) bytesOf.set(message, headroom === 0 ? out : out.subarray(headroom));
  return out;
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
