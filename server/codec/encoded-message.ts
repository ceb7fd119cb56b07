/**
 * A response message may carry its own binary encoding, made once by whoever built it
 * (a handler that answers the same bytes to many calls, or builds them from cached
 * parts): the gRPC fast path writes those bytes as they are instead of running
 * protobuf-es's reflective `toBinary` again. Other transports (Connect, JSON, gRPC-Web)
 * encode the message's fields, which say the same. It lives below every layer of
 * server/, since the handlers attach it and the transport reads it, and it knows
 * nothing of either. Pinned by test/rpc/workspace-list.test.ts, which decodes the
 * attached bytes and compares them with the fields.
 */

/** Where a message keeps its encoding: not enumerable, not a field. */
const ENCODED = Symbol("binary encoding");

/** Attaches `bytes`, the binary encoding of `message`'s fields, to it; answers it. */
export function withEncoding<T extends object>(message: T, bytes: Uint8Array): T {
  Object.defineProperty(message, ENCODED, { value: bytes, enumerable: false });
  return message;
}

/** The binary encoding attached to a message, if any. */
export function encodingOf(message: unknown): Uint8Array | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const bytes = (message as { [ENCODED]?: unknown })[ENCODED];
  return bytes instanceof Uint8Array ? bytes : undefined;
}
