import { type DescMessage, type Message, protoInt64, toBinary } from "@bufbuild/protobuf";
import { Kind, type Plan, planOf } from "./binary-plan.js";

/*
 * protobuf-es's `toBinary`, for the messages this service answers and stores, without
 * its writer's allocations. Its writer starts each message in a new `Uint8Array` of 128
 * bytes, doubles it as it fills, and answers a copy: on Node 20 a `Uint8Array` of more
 * than 64 bytes is memory outside V8's heap, about 0.35 to 0.8 µs to allocate here
 * (21 ns for one of 48), so a suggestion's 300 bytes took four of them, 3 to 5 µs.
 * This writes into one buffer kept for the process and answers a copy from Node's
 * buffer pool. The bytes are `toBinary`'s, field for field (test/codec/binary-encoding
 * .test.ts compares them on random messages of every schema): the fields in number
 * order, implicit presence skipping zero values, then the unknown fields. A schema
 * with a field of another kind (a map, a group, a list of anything but messages, a
 * scalar with explicit presence or in a oneof, a 64-bit type other than int64,
 * floating point, bytes) is left to `toBinary`, whole, as is a type that reaches one
 * (binary-plan.ts);
 * so is a message holding a value of a type its field does not take (toBinary coerces
 * it or says why not, in its own words), and one encoded while another is (a getter).
 */

/** Thrown by the writer for a value it leaves to `toBinary`. */
const UNWRITTEN = new Error("left to toBinary");

// The writer: one buffer for the process (encoding is synchronous), grown when needed.
const INITIAL = 16 * 1024;
/** A buffer grown beyond this goes back to the initial size after its message. */
const MAX_KEPT = 1024 * 1024;
let buf = Buffer.allocUnsafeSlow(INITIAL);
let pos = 0;
/** Whether a call is writing into `buf` now. */
let writing = false;

function ensure(size: number): void {
  if (pos + size <= buf.length) return;
  const grown = Buffer.allocUnsafeSlow(Math.max(buf.length * 2, pos + size));
  buf.copy(grown, 0, 0, pos);
  buf = grown;
}

function varint32(value: number): void {
  ensure(5);
  let v = value >>> 0;
  while (v > 0x7f) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[pos++] = v;
}

/** A 64-bit varint of two 32-bit halves, as protobuf-es's `varint64write`. */
function varint64(lo: number, hi: number): void {
  ensure(10);
  let l = lo >>> 0;
  let h = hi >>> 0;
  while (h !== 0 || l > 0x7f) {
    buf[pos++] = (l & 0x7f) | 0x80;
    l = ((l >>> 7) | (h << 25)) >>> 0;
    h >>>= 7;
  }
  buf[pos++] = l;
}

function string(value: string): void {
  const n = value.length;
  if (n < 0x80) {
    ensure(n + 1);
    const out = buf;
    const at = pos + 1;
    let i = 0;
    for (; i < n; i++) {
      const code = value.charCodeAt(i);
      if (code > 0x7f) break;
      out[at + i] = code;
    }
    if (i === n) {
      out[pos] = n;
      pos = at + n;
      return;
    }
  }
  const bytes = Buffer.byteLength(value, "utf8");
  varint32(bytes);
  ensure(bytes);
  pos += buf.write(value, pos, bytes, "utf8");
}

/** A message field's value: its length, then its fields. */
function sized(plan: Plan, value: unknown): void {
  const message = value as Record<string, unknown> | undefined;
  if (message?.$typeName !== plan.typeName) throw UNWRITTEN;
  ensure(1);
  const start = pos++;
  fields(plan, message);
  const length = pos - start - 1;
  if (length < 0x80) {
    buf[start] = length;
    return;
  }
  const size = varintSize(length);
  ensure(size - 1);
  buf.copyWithin(start + size, start + 1, pos);
  pos += size - 1;
  const end = pos;
  pos = start;
  varint32(length);
  pos = end;
}

function fields(plan: Plan, message: Record<string, unknown>): void {
  for (const f of plan.fields) {
    const value = message[f.localName];
    switch (f.kind) {
      case Kind.String:
        if (value === "") continue;
        if (typeof value !== "string") throw UNWRITTEN;
        varint32(f.tag);
        string(value);
        break;
      case Kind.Int32:
        if (value === 0) continue;
        if (!isInt32(value)) throw UNWRITTEN;
        varint32(f.tag);
        if (value >= 0) varint32(value);
        else varint64(value, -1);
        break;
      case Kind.Uint32:
        if (value === 0) continue;
        if (!isUint32(value)) throw UNWRITTEN;
        varint32(f.tag);
        varint32(value);
        break;
      case Kind.Int64: {
        if (typeof value !== "bigint") throw UNWRITTEN;
        const { lo, hi } = protoInt64.enc(value);
        if (lo === 0 && hi === 0) continue;
        varint32(f.tag);
        varint64(lo, hi);
        break;
      }
      case Kind.Bool:
        if (value === false) continue;
        if (value !== true) throw UNWRITTEN;
        varint32(f.tag);
        ensure(1);
        buf[pos++] = 1;
        break;
      case Kind.Message:
        // Explicit presence: as toBinary, a value of the message's own.
        if (value === undefined || !Object.hasOwn(message, f.localName)) continue;
        varint32(f.tag);
        sized(f.sub as Plan, value);
        break;
      case Kind.Messages:
        if (!Array.isArray(value)) throw UNWRITTEN;
        for (const item of value) {
          varint32(f.tag);
          sized(f.sub as Plan, item);
        }
        break;
      case Kind.OneofMessage: {
        const selected = message[f.oneof] as { case?: string; value?: unknown } | undefined;
        if (selected === undefined || selected === null) throw UNWRITTEN;
        if (selected.case !== f.localName) continue;
        varint32(f.tag);
        sized(f.sub as Plan, selected.value);
        break;
      }
    }
  }
  unknownFields(message.$unknown);
}

function isInt32(value: unknown): value is number {
  return (
    Number.isInteger(value) && (value as number) >= -0x80000000 && (value as number) <= 0x7fffffff
  );
}

function isUint32(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0xffffffff;
}

function unknownFields(value: unknown): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) throw UNWRITTEN;
  for (const { no, wireType, data } of value as NonNullable<Message["$unknown"]>) {
    if (!isUint32(no) || !isUint32(wireType) || !(data instanceof Uint8Array)) throw UNWRITTEN;
    varint32((no << 3) | wireType);
    ensure(data.length);
    buf.set(data, pos);
    pos += data.length;
  }
}

/**
 * `toBinary(schema, message)`'s bytes after `headroom` free bytes. A buffer of Node's
 * pool (a slice of a shared `ArrayBuffer`: read it through its offset) unless `kept`:
 * bytes kept as long as their message lives get a buffer of their own, so that they
 * hold no pool's 8 KB with them.
 */
export function encodeBinary(
  schema: DescMessage,
  message: Message,
  headroom = 0,
  kept = false,
): Buffer {
  const plan = planOf(schema);
  // A getter of a message that encodes another would find the buffer in use.
  if (plan === null || writing || message.$typeName !== plan.typeName) {
    return copied(toBinary(schema, message), headroom, kept);
  }
  writing = true;
  pos = 0;
  let out: Buffer;
  try {
    fields(plan, message as unknown as Record<string, unknown>);
    out = allocate(headroom + pos, kept);
    buf.copy(out, headroom, 0, pos);
  } catch {
    // A value this writer does not take as it is (UNWRITTEN), or one it found wrong:
    // toBinary coerces it, or says why not in its own words.
    out = copied(toBinary(schema, message), headroom, kept);
  } finally {
    pos = 0;
    writing = false;
    // One message of megabytes does not keep its buffer for the process.
    if (buf.length > MAX_KEPT) buf = Buffer.allocUnsafeSlow(INITIAL);
  }
  return out;
}

/** A copy of `bytes` after `headroom` free bytes, in a buffer as `allocate` gives it. */
export function copied(bytes: Uint8Array, headroom: number, kept: boolean): Buffer {
  const out = allocate(headroom + bytes.length, kept);
  out.set(bytes, headroom);
  return out;
}

/**
 * A buffer for encoded bytes: one of Node's pool, which is cheap to get but holds the
 * pool's 8 KB for as long as it lives, unless the bytes are `kept` as long as a frozen
 * message lives; then a buffer of their own.
 */
export function allocate(size: number, kept: boolean): Buffer {
  return kept ? Buffer.allocUnsafeSlow(size) : Buffer.allocUnsafe(size);
}

/** The bytes of `value` as a varint. */
export function varintSize(value: number): number {
  let size = 1;
  for (let v = value >>> 7; v > 0; v >>>= 7) size++;
  return size;
}

/** Whether this writer writes a schema's messages itself (else `toBinary` does). */
export function writesItself(schema: DescMessage): boolean {
  return planOf(schema) !== null;
}
