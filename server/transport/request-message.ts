import { type DescMessage, fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { refusalOf } from "./request-text.js";

/**
 * How every transport reads a request message: fields this build does not know are
 * dropped as it parses, so that nothing the contract does not name is ever stored or
 * echoed (a 200 KB unknown field in a PutSession's session, say).
 */
export const REQUEST_READ_OPTIONS = { readUnknownFields: false } as const;

/**
 * Parses one binary request message as every transport does: unknown fields dropped,
 * text that is not valid UTF-8 refused naming its field, and a message that does not
 * parse refused; all INVALID_ARGUMENT, for they are the caller's errors, not the
 * server's (connect-node would answer INTERNAL). Pinned by test/e2e/bad-input.test.ts.
 */
export function parseRequestMessage(schema: DescMessage, bytes: Uint8Array): unknown {
  try {
    return fromBinary(schema, bytes, REQUEST_READ_OPTIONS);
  } catch (err) {
    throw refusalOf(schema, bytes, err);
  }
}

/** connect-node's JSON decoding: text that is not valid UTF-8 is refused, not replaced. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses one JSON request message as connect-node does (its text strictly UTF-8,
 * unknown fields ignored), so that the adapter can refuse one that does not parse
 * before connect-node reads it, and the call is logged: INVALID_ARGUMENT with
 * connect-node's own text. Pinned by test/e2e/bad-input-encodings.test.ts.
 */
export function parseJsonRequest(schema: DescMessage, bytes: Uint8Array): unknown {
  try {
    return fromJsonString(schema, STRICT_UTF8.decode(bytes), { ignoreUnknownFields: true });
  } catch (err) {
    throw ConnectError.from(err, Code.InvalidArgument);
  }
}
