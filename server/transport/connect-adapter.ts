import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { Code, ConnectError, type ConnectRouter, createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import {
  type ConnectNodeAdapterOptions,
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import { refusedGetMessage, withGetCaching } from "./connect-get.js";
import { withSpecGrpcMessage } from "./grpc-message.js";
import type { CallRefused, ConnectionValues } from "./handler-types.js";
import { readCall } from "./request-body.js";
import { REQUEST_READ_OPTIONS } from "./request-message.js";

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
  /** Told of each call refused before its handler ran, so that it is logged and counted. */
  readonly refused?: CallRefused;
};

/** The encodings a request may be compressed with (and its answer, when asked). */
const COMPRESSIONS = [compressionGzip, compressionBrotli];

/**
 * connect-node's adapter (Connect, gRPC-Web and gRPC on HTTP/1.1 and HTTP/2), reading
 * requests the way the gRPC fast path does, so that bad input is answered alike on
 * every protocol and every encoding (request-body.ts reads each call first):
 * - a request message that does not parse or decompress, or whose text is not valid
 *   UTF-8, is INVALID_ARGUMENT, compressed (gzip, br) or not (connect-node answers a
 *   binary parse failure INTERNAL, HTTP 500); a JSON body that is not valid UTF-8 is
 *   refused, not decoded with U+FFFD in place of the bad bytes;
 * - a deadline header that is malformed is INVALID_ARGUMENT, one already past
 *   DEADLINE_EXCEEDED, before the handler runs; one of any length is accepted (no
 *   `maxTimeoutMs`), held at what a Node timer can wait;
 * - each call so refused is told to `refused`, and so logged and counted;
 * - unknown fields are dropped as messages are parsed;
 * - a Connect GET of a read (`idempotency_level = NO_SIDE_EFFECTS`, connect-node answers
 *   it) carries caching headers (`withGetCaching`);
 * - a gRPC status message is percent-encoded as the gRPC spec asks (`withSpecGrpcMessage`).
 * Pinned by test/e2e/bad-input.test.ts and test/e2e/bad-input-encodings.test.ts.
 */
export function createConnectAdapter(
  options: ConnectAdapterOptions,
): (req: NodeRequest, res: NodeResponse) => void {
  const router = createConnectRouter({
    acceptCompression: COMPRESSIONS,
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
    const values = options.valuesOf?.(req.socket);
    const uReq = universalRequestFromNodeRequest(req, res, undefined, values);
    const refused =
      uReq.method === "GET" ? refusedGetMessage(uReq, handler.method.input) : undefined;
    if (refused !== undefined) {
      for (const [name, value] of answerHeaders) refused.header?.set(name, value);
      void universalResponseToNodeResponse(refused, res);
      return;
    }
    readCall(uReq, handler.method, {
      readMaxBytes: options.readMaxBytes,
      compressions: COMPRESSIONS,
    })
      .then((read) => {
        if (read.refused !== undefined) options.refused?.(handler.method, read.refused);
        return handler(read.request);
      })
      .then((uRes) => (uReq.method === "GET" ? withGetCaching(uReq, uRes) : uRes))
      .then((uRes) => {
        for (const [name, value] of answerHeaders) uRes.header?.set(name, value);
        return universalResponseToNodeResponse(withSpecGrpcMessage(uRes), res);
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
