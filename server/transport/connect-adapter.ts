import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import {
  type ConnectNodeAdapterOptions,
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import { holdDeadlineHeaders } from "./call-timeout.js";
import { refusedGetMessage, withGetCaching } from "./connect-get.js";
import type { ConnectionValues } from "./handler-types.js";
import { parseRequestMessage, REQUEST_READ_OPTIONS } from "./request-message.js";

/** A request either HTTP version hands over. */
type NodeRequest = IncomingMessage | Http2ServerRequest;
type NodeResponse = ServerResponse | Http2ServerResponse;

/** What the adapter serves, as connect-node's `connectNodeAdapter` takes it. */
export type ConnectAdapterOptions = Pick<
  ConnectNodeAdapterOptions,
  "fallback" | "readMaxBytes" | "shutdownSignal"
> & {
  readonly routes: (router: ConnectRouter) => void;
  readonly readMaxBytes: number;
  /** Headers set on every RPC's answer (the server's version and contract revision). */
  readonly answerHeaders?: Readonly<Record<string, string>>;
  /** The context values each call starts with, from its connection (a client certificate). */
  readonly valuesOf?: ConnectionValues;
};

/**
 * connect-node's adapter (Connect, gRPC-Web and gRPC on HTTP/1.1 and HTTP/2), reading
 * requests the way the gRPC fast path does, so that bad input is answered alike on
 * every protocol:
 * - a binary request message that does not parse, or whose text is not valid UTF-8, is
 *   INVALID_ARGUMENT (connect-node answers a parse failure INTERNAL, HTTP 500): each
 *   uncompressed binary request is read whole (as connect-node does for one message)
 *   and parsed by `parseRequestMessage` before connect-node sees it;
 * - a JSON body that is not valid UTF-8 is INVALID_ARGUMENT (connect-node would decode
 *   it with U+FFFD in place of the bad bytes and record that);
 * - unknown fields are dropped as messages are parsed;
 * - a caller's deadline is accepted however long (no `maxTimeoutMs`), held at what a
 *   Node timer can wait (`holdDeadlineHeaders`);
 * - a Connect GET of a read (`idempotency_level = NO_SIDE_EFFECTS`, connect-node answers
 *   it) carries caching headers (`withGetCaching`).
 * Pinned by test/e2e/bad-input.test.ts.
 */
export function createConnectAdapter(
  options: ConnectAdapterOptions,
): (req: NodeRequest, res: NodeResponse) => void {
  const router = createConnectRouter({
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes: options.readMaxBytes,
    ...(options.shutdownSignal === undefined ? {} : { shutdownSignal: options.shutdownSignal }),
    binaryOptions: REQUEST_READ_OPTIONS,
    // connect-es reads `textDecoder` here (protocol/serialization.ts); its type omits it.
    jsonOptions: { textDecoder: new TextDecoder("utf-8", { fatal: true }) } as object,
  });
  options.routes(router);
  const paths = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) paths.set(handler.requestPath, handler);
  const fallback = options.fallback;
  const answerHeaders = Object.entries(options.answerHeaders ?? {});
  return (req, res) => {
    const handler = paths.get(req.url?.split("?", 2)[0] ?? "");
    if (handler === undefined) {
      if (fallback !== undefined) fallback(req, res);
      else res.writeHead(404).end();
      return;
    }
    holdDeadlineHeaders(req.headers);
    const values = options.valuesOf?.(req.socket);
    const uReq = universalRequestFromNodeRequest(req, res, undefined, values);
    const refused =
      uReq.method === "GET" ? refusedGetMessage(uReq, handler.method.input) : undefined;
    if (refused !== undefined) {
      for (const [name, value] of answerHeaders) refused.header?.set(name, value);
      void universalResponseToNodeResponse(refused, res);
      return;
    }
    handler(checkedRequest(uReq, handler, options.readMaxBytes))
      .then((uRes) => (uReq.method === "GET" ? withGetCaching(uReq, uRes) : uRes))
      .then((uRes) => {
        for (const [name, value] of answerHeaders) uRes.header?.set(name, value);
        return universalResponseToNodeResponse(uRes, res);
      })
      .catch((reason: unknown) => {
        // A client that went away is no failure; anything else is logged, as connect-node does.
        if (ConnectError.from(reason).code === Code.Aborted) return;
        console.error(
          `handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`,
          reason,
        );
      });
  };
}

/** How a request's content type frames its message, when the adapter checks it. */
function framingOf(req: UniversalServerRequest): "enveloped" | "raw" | undefined {
  if (req.method !== "POST") return undefined;
  const type = req.header.get("content-type") ?? "";
  if (/^application\/(grpc|grpc-web|connect)\+proto(;|$)/.test(type)) return "enveloped";
  if (/^application\/(grpc|grpc-web)(;|$)/.test(type)) return "enveloped";
  if (!/^application\/proto(;|$)/.test(type)) return undefined;
  const encoding = req.header.get("content-encoding");
  return encoding === null || encoding === "identity" ? "raw" : undefined;
}

/** The request with its body checked before connect-node reads it, when it can be. */
function checkedRequest(
  req: UniversalServerRequest,
  handler: UniversalHandler,
  readMaxBytes: number,
): UniversalServerRequest {
  const kind = handler.method.methodKind;
  if (kind !== "unary" && kind !== "server_streaming") return req;
  const framing = framingOf(req);
  const body = req.body;
  if (framing === undefined || body === null || typeof body !== "object") return req;
  if (!(Symbol.asyncIterator in body)) return req;
  const schema = handler.method.input;
  return { ...req, body: checkedBody(body, schema, framing, readMaxBytes + 5) };
}

/**
 * The body read whole and checked, then handed on; one over `limit` bytes is handed on
 * unchecked, for connect-node to refuse by its size.
 */
async function* checkedBody(
  body: AsyncIterable<Uint8Array>,
  schema: DescMessage,
  framing: "enveloped" | "raw",
  limit: number,
): AsyncGenerator<Uint8Array> {
  let chunks: Uint8Array[] | undefined = [];
  let size = 0;
  for await (const chunk of body) {
    if (chunks === undefined) {
      yield chunk;
      continue;
    }
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size > limit) {
      yield* chunks;
      chunks = undefined;
    }
  }
  if (chunks === undefined) return;
  const all = Buffer.concat(chunks, size);
  if (framing === "raw") parseRequestMessage(schema, all);
  else checkEnvelopes(all, schema);
  yield all;
}

/** Parses each whole, uncompressed message envelope; framing errors are connect-node's. */
function checkEnvelopes(all: Buffer, schema: DescMessage): void {
  let at = 0;
  while (at + 5 <= all.length) {
    const flags = all[at] as number;
    const length = all.readUInt32BE(at + 1);
    if (flags !== 0 || at + 5 + length > all.length) return;
    parseRequestMessage(schema, all.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
}
