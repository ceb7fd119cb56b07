import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { expect, test } from "vitest";
import { SuggestionSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestTaskResponseSchema } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { configureProtobufText, encodeUtf8 } from "../../server/transport/request-text.js";

/** A deterministic generator (mulberry32), so a failure names the same strings again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Strings of every kind of UTF-16: ASCII, two- and three-byte characters, pairs,
 * lone surrogates of both halves, and lengths on both sides of Node's pool (a string of
 * more than 4 KB of UTF-8 gets a buffer of its own).
 */
function strings(): string[] {
  const next = random(16);
  const units = [0x41, 0x7f, 0xe9, 0x7ff, 0x20ac, 0xd83d, 0xde00, 0xdbff, 0xdc00, 0xfffd, 0xffff];
  const made = ["", "a", "\uD800", "\uDFFF", "x\uD83D\uDE00y", "Sé ✓ 🙂"];
  for (let i = 0; i < 400; i++) {
    const length = i % 50 === 0 ? 3000 + Math.floor(next() * 3000) : Math.floor(next() * 80);
    let text = "";
    for (let j = 0; j < length; j++) {
      text += String.fromCharCode(
        next() < 0.5 ? units[Math.floor(next() * units.length)] : Math.floor(next() * 0x10000),
      );
    }
    made.push(text);
  }
  return made;
}

test("the service's UTF-8 encoder gives TextEncoder's bytes, and protobuf-es writes with it", () => {
  const encoder = new TextEncoder();
  const texts = strings();
  const message = (text: string) =>
    create(SuggestTaskResponseSchema, {
      result: text,
      suggestion: create(SuggestionSchema, { id: "a", title: text, brief: `${text}!` }),
    });
  // Encoded by protobuf-es's own text encoding, before the service configures its own.
  const before = texts.map((text) => toBinary(SuggestTaskResponseSchema, message(text)));

  configureProtobufText();
  expect(getTextEncoding().encodeUtf8).toBe(encodeUtf8);
  for (const [i, text] of texts.entries()) {
    expect(Buffer.from(encodeUtf8(text)).equals(encoder.encode(text)), `string ${i}`).toBe(true);
    const after = toBinary(SuggestTaskResponseSchema, message(text));
    expect(Buffer.from(after).equals(before[i] as Uint8Array), `message ${i}`).toBe(true);
    expect(fromBinary(SuggestTaskResponseSchema, after).suggestion?.title).toBe(
      new TextDecoder().decode(encoder.encode(text)),
    );
  }
});
