import { isMessage } from "@bufbuild/protobuf";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

/** A lone surrogate: never the result of decoding valid UTF-8, nor valid in UTF-8 text. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** What a string decoded from invalid UTF-8 starts with, so the guard can see it. */
const INVALID_UTF8_MARK = "\uD800";

let configured = false;
/** True only while `decodingRequest` runs: the one time invalid UTF-8 is marked. */
let marking = false;
/** Whether the decoding that `decodingRequest` runs marked any text. */
let marked = false;

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
 * Start-up step: protobuf-es's text encoding, which is process-wide
 * (`configureTextEncoding`). It makes protobuf decoding of invalid UTF-8 in a request
 * answerable with INVALID_ARGUMENT naming the field, instead of a parse failure without
 * one: reading a request's bytes is the transport's job (request-message.ts). And it
 * encodes text with `encodeUtf8` above.
 *
 * The decoder behaves exactly as protobuf-es's own (strict where protobuf-es asks for
 * it, else U+FFFD) except inside `decodingRequest`, where text that is not valid UTF-8
 * is decoded with a lone surrogate in front, which valid UTF-8 never yields, so that
 * `assertWellFormed` can name the field. `decodingRequest` is synchronous, so nothing
 * else (a Connect client in the same process, the remote chat host's client) ever
 * decodes while it runs: clients in the process decode as usual. Idempotent; called
 * once by `startSuggestServer` (server/server.ts). Pinned by test/e2e/bad-input.test.ts,
 * test/e2e/utf8-scope.test.ts and test/transport/text-encoding.test.ts.
 */
export function configureProtobufText(): void {
  if (configured) return;
  configured = true;
  const base = getTextEncoding();
  const strict = new TextDecoder("utf-8", { fatal: true });
  configureTextEncoding({
    encodeUtf8,
    checkUtf8: base.checkUtf8,
    decodeUtf8(bytes: Uint8Array, strictly?: boolean) {
      if (!marking) return base.decodeUtf8(bytes, strictly);
      try {
        return strict.decode(bytes);
      } catch {
        marked = true;
        return INVALID_UTF8_MARK + base.decodeUtf8(bytes, false);
      }
    },
  });
}

/**
 * Decodes one request message with `decode` (synchronous) and answers it, or throws
 * INVALID_ARGUMENT naming the first field whose text is not valid UTF-8. Only a
 * decoding that marked some text is walked for the field to name: text decoded from
 * valid UTF-8 never holds a lone surrogate, so an unmarked message is well-formed.
 */
export function decodingRequest<T>(decode: () => T): T {
  marking = true;
  marked = false;
  let message: T;
  try {
    message = decode();
  } finally {
    marking = false;
  }
  if (marked) assertWellFormed(message);
  return message;
}

/** The path of the first string in a message that is not well-formed Unicode, if any. */
export function findMalformedText(value: unknown, path = ""): string | undefined {
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findMalformedText(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === "object" && !(value instanceof Uint8Array)) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$typeName" || key === "$unknown") continue;
      const found = findMalformedText(inner, path === "" ? key : `${path}.${key}`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** Throws INVALID_ARGUMENT when a request holds text that is not valid UTF-8. */
export function assertWellFormed(request: unknown): void {
  if (!isMessage(request)) return;
  const path = findMalformedText(request);
  if (path !== undefined) {
    throw new ConnectError(`${path || "request"} is not valid UTF-8`, Code.InvalidArgument);
  }
}
