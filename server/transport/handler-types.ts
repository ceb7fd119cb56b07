import type http from "node:http";
import type http2 from "node:http2";
import type { Socket } from "node:net";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ConnectError, ContextValues, ServiceImpl } from "@connectrpc/connect";

/**
 * The types every transport module shares. They live apart from the modules that use
 * them so that those import one another in one direction only (one-port serves what
 * the fast path and connect-node hand it; neither knows one-port).
 */

/** A request handler both HTTP versions share (connect-node's adapter is one). */
export type DualHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** Answers an HTTP/2 stream when it is a call it takes; false hands it on. */
export type StreamHandler = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
) => boolean;

/**
 * The context values a call starts with, made from the connection it came on (a TLS
 * socket carries the client's certificate): both the fast path and connect-node call it
 * once per call, so that what a connection proves reaches the call pipeline whatever the
 * protocol.
 */
export type ConnectionValues = (socket: Socket) => ContextValues;

/**
 * Told of a call the transport refused before its handler ran (its request did not
 * parse or decompress, its deadline header was malformed or already past), so that it
 * is logged and counted like every call (the call pipeline's `callRefusals`). Both the
 * fast path and connect-node's adapter tell it, whatever the protocol.
 */
export type CallRefused = (method: DescMethod, error: ConnectError) => void;

/**
 * A service as a transport serves it: its descriptor and its implementation, already
 * wrapped by the call pipeline. The transport knows nothing else of it.
 */
export interface ServedService {
  readonly service: DescService;
  readonly impl: ServiceImpl<DescService>;
}

/**
 * A server stream that can push its messages instead of being read one `next()` at a
 * time: the shape of server/store/push-source.ts `PushSource`, read here by its shape,
 * since the transport imports nothing of the service. `push` answers false to pause
 * until `resume`; `end` is told once; `stop` ends the stream without telling the sink.
 */
export interface Pushable {
  pushTo(sink: {
    push(message: unknown): boolean;
    end(error?: unknown): void;
  }): { resume(): void; stop(): void } | undefined;
}

/** `stream` as a Pushable, when it is one. */
export function pushableOf(stream: object): Pushable | undefined {
  return typeof (stream as Partial<Pushable>).pushTo === "function"
    ? (stream as Pushable)
    : undefined;
}
