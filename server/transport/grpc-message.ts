import type { DualHandler } from "./handler-types.js";

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

function respec(headers: unknown): unknown {
  if (headers === null || typeof headers !== "object") return headers;
  const h = headers as Record<string, unknown>;
  const message = h["grpc-message"];
  if (typeof message !== "string") return headers;
  let decoded: string;
  try {
    decoded = decodeURIComponent(message);
  } catch {
    return headers;
  }
  return { ...h, "grpc-message": encodeGrpcMessage(decoded) };
}

/**
 * Rewrites the `grpc-message` that connect-node writes (with `encodeURIComponent`, which
 * also encodes characters such as ';') into the spec's minimal encoding. Clients that
 * decode with `decodeURI`, as @grpc/grpc-js does, would otherwise show a refusal's ';'
 * as "%3B", and the model would read a text that is not the contract's. Pinned by
 * test/e2e/interop-grpc.test.ts.
 */
export function withSpecGrpcMessage(handler: DualHandler): DualHandler {
  return (req, res) => {
    const writeHead = res.writeHead as (...args: unknown[]) => unknown;
    const addTrailers = res.addTrailers as (headers: unknown) => void;
    (res as { writeHead: unknown }).writeHead = (...args: unknown[]) =>
      writeHead.apply(res, args.map(respec));
    (res as { addTrailers: unknown }).addTrailers = (headers: unknown) =>
      addTrailers.call(res, respec(headers));
    handler(req, res);
  };
}
