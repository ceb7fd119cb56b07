import type { UniversalServerResponse } from "@connectrpc/connect/protocol";

/**
 * Encodes a status message as the gRPC spec asks: bytes from 0x20 to 0x7E stand as
 * they are, except '%'; every other byte of the UTF-8 text is percent-encoded.
 */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** `headers`' grpc-message in the spec's encoding (idempotent: the text is kept). */
function respec(headers: Headers | undefined): void {
  const message = headers?.get("grpc-message");
  if (headers === undefined || message === null || message === undefined) return;
  let decoded: string;
  try {
    decoded = decodeURIComponent(message);
  } catch {
    return;
  }
  headers.set("grpc-message", encodeGrpcMessage(decoded));
}

/**
 * `answer` with the `grpc-message` connect-node sets (with `encodeURIComponent`, which
 * also encodes characters such as ';') in the spec's minimal encoding. Clients that
 * decode with `decodeURI`, as @grpc/grpc-js does, would otherwise show a refusal's ';'
 * as "%3B", and the model would read a text that is not the contract's.
 *
 * connect-node fills the answer's headers and trailers while its body is read, and
 * writes the head after the first read: so the body is read through a wrapper that
 * rewrites both after every read, before connect-node writes them. The answer's own
 * `throw` and `return` are kept, so a failed write still reaches the handler. Pinned by
 * test/e2e/interop-grpc.test.ts.
 */
export function withSpecGrpcMessage(answer: UniversalServerResponse): UniversalServerResponse {
  const body = answer.body;
  if (body === undefined) {
    respec(answer.header);
    respec(answer.trailer);
    return answer;
  }
  const respecAll = <R>(read: R): R => {
    respec(answer.header);
    respec(answer.trailer);
    return read;
  };
  const wrapped: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]() {
      const inner = body[Symbol.asyncIterator]();
      const it: AsyncIterator<Uint8Array> = { next: () => inner.next().then(respecAll) };
      if (inner.throw !== undefined) {
        const fail = inner.throw.bind(inner);
        it.throw = (e?: unknown) => fail(e).then(respecAll);
      }
      if (inner.return !== undefined) it.return = inner.return.bind(inner);
      return it;
    },
  };
  return { ...answer, body: wrapped };
}
