import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { closeUnread } from "../error-answer.js";
import { frameOf, GRPC_OK, GRPC_RESPONSE_HEADERS, statusOf, toConnectError } from "../grpc-wire.js";
import type {
  CallRefused,
  ConnectionValues,
  ServedService,
  StreamHandler,
} from "../handler-types.js";
import { openCall } from "./grpc-call.js";
import { serveServerStream } from "./grpc-server-stream.js";

/** How the fast path runs. */
export interface GrpcFastPathOptions {
  /** The largest request message accepted, in bytes (as connect-node's `readMaxBytes`). */
  readonly readMaxBytes: number;
  /** Aborted when the server shuts down. */
  readonly shutdownSignal: AbortSignal;
  /** Headers set on every answer (the server's version and contract revision). */
  readonly answerHeaders?: Readonly<Record<string, string>>;
  /** The context values each call starts with, from its connection (a client certificate). */
  readonly valuesOf?: ConnectionValues;
  /** Told of each call refused before its handler ran, so that it is logged and counted. */
  readonly refused?: CallRefused;
}

/** The options a call is served with: the response headers made once. */
type ServeOptions = GrpcFastPathOptions & {
  readonly responseHeaders: Readonly<Record<string, string | number>>;
};

type UnaryFn = (request: unknown, context: HandlerContext) => Promise<unknown>;
type StreamFn = (request: unknown, context: HandlerContext) => AsyncIterable<unknown>;

type Route = {
  readonly service: ServedService["service"];
  readonly method: DescMethod;
} & (
  | { readonly kind: "unary"; readonly fn: UnaryFn }
  | { readonly kind: "server_streaming"; readonly fn: StreamFn }
);

/**
 * Unary calls in binary gRPC, answered straight on the HTTP/2 stream with the same
 * wrapped implementations connect-node serves (so auth, checks, deadlines, logs and
 * metrics are the same), without connect-node's per-call machinery, which costs several times a raw HTTP/2
 * handler's CPU per call (docs/performance.md, "The gRPC path").
 * It takes only what it fully handles: POST, `application/grpc` or `+proto`, no
 * compression, a unary or server-streaming method. Everything else (Connect, gRPC-Web,
 * JSON, client and bidi streams, compressed calls) is handed to connect-node. Pinned by test/e2e/interop-grpc.test.ts
 * and every gRPC interop test, which run through it.
 */
export function createGrpcFastPath(
  services: readonly ServedService[],
  options: GrpcFastPathOptions,
): StreamHandler {
  const routes = new Map<string, Route>();
  for (const { service, impl } of services) {
    for (const method of service.methods) {
      const fn = (impl as unknown as Record<string, UnaryFn | StreamFn | undefined>)[
        method.localName
      ];
      if (fn === undefined) continue;
      const path = `/${service.typeName}/${method.name}`;
      if (method.methodKind === "unary") {
        routes.set(path, { service, method, kind: "unary", fn: fn.bind(impl) as UnaryFn });
      } else if (method.methodKind === "server_streaming") {
        routes.set(path, {
          service,
          method,
          kind: "server_streaming",
          fn: fn.bind(impl) as StreamFn,
        });
      }
    }
  }
  const serveOptions: ServeOptions = {
    ...options,
    responseHeaders: Object.freeze({ ...GRPC_RESPONSE_HEADERS, ...options.answerHeaders }),
  };
  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    const type = headers["content-type"];
    if (type !== "application/grpc" && type !== "application/grpc+proto") return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const route = routes.get(headers[":path"] ?? "");
    if (route === undefined) return false;
    serve(stream, headers, route, serveOptions);
    return true;
  };
}

function serve(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: Route,
  options: ServeOptions,
): void {
  const limit = options.readMaxBytes + 5;
  const chunks: Buffer[] = [];
  let size = 0;
  let answered = false;
  const fail = (error: ConnectError) => {
    if (answered) return;
    answered = true;
    respondError(stream, error, options.responseHeaders);
  };
  stream.on("error", () => {
    // A client that resets its stream: nothing to answer.
  });
  stream.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) {
      if (answered) return;
      const error = new ConnectError(
        `message size ${size - 5} is larger than configured readMaxBytes ${options.readMaxBytes}`,
        Code.ResourceExhausted,
      );
      options.refused?.(route.method, error);
      fail(error);
      closeUnread(stream);
      return;
    }
    chunks.push(chunk);
  });
  stream.on("end", () => {
    if (answered) return;
    const body = Buffer.concat(chunks, size);
    if (route.kind === "server_streaming") {
      answered = true;
      void serveServerStream(stream, headers, route, options, body);
      return;
    }
    void call(stream, headers, route, options, body).then(
      (frame) => {
        if (answered || stream.destroyed) return;
        answered = true;
        stream.respond(options.responseHeaders, { waitForTrailers: true });
        stream.once("wantTrailers", () => stream.sendTrailers(GRPC_OK));
        stream.end(frame);
      },
      (err: unknown) => fail(toConnectError(err)),
    );
  });
}

/** Runs one call: the request's frame in, the response's frame out. */
async function call(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: Route,
  options: GrpcFastPathOptions,
  body: Buffer,
): Promise<Buffer> {
  const { input, context } = openCall(stream, headers, route, options, body);
  try {
    return frameOf(route.method.output, await (route.fn as UnaryFn)(input, context));
  } finally {
    context.ended();
  }
}

/** A trailers-only response carrying the status, its message and its details. */
function respondError(
  stream: ServerHttp2Stream,
  error: ConnectError,
  responseHeaders: Readonly<Record<string, string | number>>,
): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond({ ...responseHeaders, ...statusOf(error) }, { endStream: true });
}
