import { isMessage } from "@bufbuild/protobuf";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import type { CallHook } from "./call-pipeline.js";

/** A lone surrogate: never the result of decoding valid UTF-8, nor valid in UTF-8 text. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** What a string decoded from invalid UTF-8 starts with, so the guard can see it. */
const INVALID_UTF8_MARK = "\uD800";

let configured = false;

/**
 * Makes protobuf decoding of invalid UTF-8 answerable with INVALID_ARGUMENT.
 *
 * protobuf-es rejects invalid UTF-8 in proto3 strings by throwing while it parses, and
 * connect-es turns every parse failure into INTERNAL before any interceptor or handler
 * runs. So the decoder never throws: text that is not valid UTF-8 is decoded with a
 * lone surrogate in front, which valid UTF-8 never yields, and `wellFormedText` answers
 * INVALID_ARGUMENT for any request text holding a lone surrogate. Pinned by test/e2e/bad-input.test.ts. Process-wide and idempotent.
 */
export function configureUtf8Marking(): void {
  if (configured) return;
  configured = true;
  const base = getTextEncoding();
  const strict = new TextDecoder("utf-8", { fatal: true });
  configureTextEncoding({
    encodeUtf8: base.encodeUtf8,
    checkUtf8: base.checkUtf8,
    decodeUtf8(bytes: Uint8Array) {
      try {
        return strict.decode(bytes);
      } catch {
        return INVALID_UTF8_MARK + base.decodeUtf8(bytes, false);
      }
    },
  });
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

/** The pipeline's check that a request's text is valid UTF-8 (see `configureUtf8Marking`). */
export const wellFormedText: CallHook = {
  before(call) {
    assertWellFormed(call.request);
  },
};
