import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { decodingRequest } from "./request-text.js";

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
    return decodingRequest(() => fromBinary(schema, bytes, REQUEST_READ_OPTIONS));
  } catch (err) {
    if (err instanceof ConnectError) throw err;
    throw new ConnectError(
      `parse binary: ${err instanceof Error ? err.message : String(err)}`,
      Code.InvalidArgument,
    );
  }
}
