import { createHash } from "node:crypto";
import type { DescMessage } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { ConnectError } from "@connectrpc/connect";
import type { UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { parseRequestMessage } from "./request-message.js";

/*
 * Connect GET (`?connect=v1&encoding=json|proto&message=...`), which connect-node answers
 * for the RPCs marked `idempotency_level = NO_SIDE_EFFECTS`: its message read as every
 * transport reads one, and its answer marked for caches.
 */

/**
 * What a Connect GET answer carries for caches. The reads that answer GET (the RPCs
 * marked `idempotency_level = NO_SIDE_EFFECTS`) change with every offer and settlement
 * and depend on the caller's token, so a cache may keep an answer only for the caller
 * (`private`) and must ask again before using it (`no-cache`); asking again costs little,
 * for the answer carries an `ETag` (a digest of its body) and a request whose
 * `If-None-Match` names the current one is answered 304 Not Modified, without a body.
 */
export const GET_CACHE_CONTROL = "private, no-cache";

/**
 * `res`, the answer of a Connect GET, with the caching headers above: an OK answer gets
 * its `ETag`, or is turned into 304 when `req`'s `If-None-Match` names it; an error is
 * marked `no-store`. Pinned by test/e2e/connect-get.test.ts.
 */
export async function withGetCaching(
  req: UniversalServerRequest,
  res: UniversalServerResponse,
): Promise<UniversalServerResponse> {
  const header = new Headers(res.header);
  header.set("vary", "authorization");
  if (res.status !== 200 || res.body === undefined || !(Symbol.asyncIterator in res.body)) {
    header.set("cache-control", "no-store");
    return { ...res, header };
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of res.body) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  header.set("cache-control", GET_CACHE_CONTROL);
  header.set("etag", etag);
  if (matches(req.header.get("if-none-match"), etag)) {
    for (const name of ["content-length", "content-type", "content-encoding"]) header.delete(name);
    return { status: 304, header };
  }
  return { ...res, header, body: oneChunk(body) };
}

/** Whether an `If-None-Match` value names `etag` (weak or strong, or `*`). */
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch
    .split(",")
    .map((tag) => tag.trim().replace(/^W\//, ""))
    .some((tag) => tag === etag || tag === "*");
}

async function* oneChunk(body: Uint8Array): AsyncGenerator<Uint8Array> {
  yield body;
}

/**
 * The refusal of a GET whose binary message (`encoding=proto`, uncompressed) does not
 * parse, or carries text that is not valid UTF-8: INVALID_ARGUMENT, as a POST's body is
 * answered (connect-node would answer INTERNAL, HTTP 500); undefined when it parses or
 * is connect-node's to read. Pinned by test/e2e/connect-get.test.ts.
 */
export function refusedGetMessage(
  req: UniversalServerRequest,
  schema: DescMessage,
): UniversalServerResponse | undefined {
  const query = new URL(req.url, "http://localhost").searchParams;
  if (query.get("encoding") !== "proto" || query.has("compression")) return undefined;
  const message = query.get("message") ?? "";
  try {
    const bytes =
      query.get("base64") === "1" ? base64Decode(message) : new TextEncoder().encode(message);
    parseRequestMessage(schema, bytes);
    return undefined;
  } catch (err) {
    const error = ConnectError.from(err);
    return {
      status: codeToHttpStatus(error.code),
      header: new Headers({ "content-type": "application/json", "cache-control": "no-store" }),
      body: oneChunk(errorToJsonBytes(error, {})),
    };
  }
}
