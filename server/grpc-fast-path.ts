import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { constants } from "node:http2";
import {
  create,
  type DescMessage,
  type DescMethod,
  fromBinary,
  isMessage,
  toBinary,
} from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { encodeGrpcMessage } from "./grpc-message.js";
import type { ServedService } from "./routes.js";

/** How the fast path runs. */
export interface GrpcFastPathOptions {
  /** The largest request message accepted, in bytes (as connect-node's `readMaxBytes`). */
  readonly readMaxBytes: number;
  /** The longest deadline a caller may ask for, in ms. */
  readonly maxTimeoutMs: number;
  /** Aborted when the server shuts down. */
  readonly shutdownSignal: AbortSignal;
}

/** Answers a stream when it is a call the fast path takes; false hands it on. */
export type StreamHandler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

type UnaryFn = (request: unknown, context: HandlerContext) => Promise<unknown>;
type StreamFn = (request: unknown, context: HandlerContext) => AsyncIterable<unknown>;

type Route = {
  readonly service: ServedService["service"];
  readonly method: DescMethod;
} & (
  | { readonly kind: "unary"; readonly fn: UnaryFn }
  | { readonly kind: "server_streaming"; readonly fn: StreamFn }
);

const RESPONSE_HEADERS = {
  ":status": 200,
  "content-type": "application/grpc",
  "grpc-accept-encoding": "identity",
};

/**
 * Unary calls in binary gRPC, answered straight on the HTTP/2 stream with the same
 * wrapped implementations connect-node serves (so auth, checks, deadlines, logs and
 * metrics are the same), without connect-node's per-call machinery: perf-notes.md puts
 * connect-node at about 390 µs of CPU per call here and a raw HTTP/2 handler near 50.
 * It takes only what it fully handles: POST, `application/grpc` or `+proto`, no
 * compression, a unary or server-streaming method. Everything else (Connect, gRPC-Web,
 * JSON, client and bidi streams, compressed calls) is handed to connect-node. Pinned by test/grpc-fast-path.test.ts
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
  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    const type = headers["content-type"];
    if (type !== "application/grpc" && type !== "application/grpc+proto") return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const route = routes.get(headers[":path"] ?? "");
    if (route === undefined) return false;
    serve(stream, headers, route, options);
    return true;
  };
}

function serve(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: Route,
  options: GrpcFastPathOptions,
): void {
  const limit = options.readMaxBytes + 5;
  const chunks: Buffer[] = [];
  let size = 0;
  let answered = false;
  const fail = (error: ConnectError) => {
    if (answered) return;
    answered = true;
    respondError(stream, error);
  };
  stream.on("error", () => {
    // A client that resets its stream: nothing to answer.
  });
  stream.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) {
      fail(
        new ConnectError(
          `message size ${size - 5} is larger than configured readMaxBytes ${options.readMaxBytes}`,
          Code.ResourceExhausted,
        ),
      );
      stream.close(constants.NGHTTP2_NO_ERROR);
      return;
    }
    chunks.push(chunk);
  });
  stream.on("end", () => {
    if (answered) return;
    const body = Buffer.concat(chunks, size);
    if (route.kind === "server_streaming") {
      answered = true;
      void serveStream(stream, headers, route, options, body);
      return;
    }
    void call(stream, headers, route, options, body).then(
      (frame) => {
        if (answered || stream.destroyed) return;
        answered = true;
        stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
        stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.end(frame);
      },
      (err: unknown) => fail(toConnectError(err)),
    );
  });
}

/**
 * A server-streaming call: each message as it comes, then the status in trailers. The
 * client leaving closes the stream, which aborts the context's signal and so ends the
 * handler (WatchSuggestions); a slow client holds the handler back through `drain`.
 */
async function serveStream(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: Route & { readonly kind: "server_streaming" },
  options: GrpcFastPathOptions,
  body: Buffer,
): Promise<void> {
  let started = false;
  const finish = (status: Record<string, string>) => {
    if (stream.destroyed || stream.closed) return;
    if (!started) {
      stream.respond({ ...RESPONSE_HEADERS, ...status }, { endStream: true });
      return;
    }
    stream.once("wantTrailers", () => stream.sendTrailers(status));
    stream.end();
  };
  try {
    const input = parseFrame(route.method.input, body);
    const timeout = parseTimeout(headerValue(headers["grpc-timeout"]), options.maxTimeoutMs);
    if (timeout.error !== undefined) throw timeout.error;
    const context = lazyContext(stream, headers, route, options, timeout.timeoutMs);
    for await (const message of route.fn(input, context)) {
      if (stream.destroyed || stream.closed) break;
      if (!started) {
        started = true;
        stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
      }
      if (!stream.write(frameOf(route.method.output, message))) await drained(stream);
    }
    finish({ "grpc-status": "0" });
  } catch (err) {
    finish(statusOf(toConnectError(err)));
  }
}

/** Resolves when the stream can take more, or is gone. */
function drained(stream: ServerHttp2Stream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
  });
}

/** A response message in its gRPC frame. */
function frameOf(schema: DescMessage, result: unknown): Buffer {
  const output = isMessage(result, schema) ? result : create(schema, result as never);
  const bytes = toBinary(schema, output);
  const frame = Buffer.allocUnsafe(5 + bytes.length);
  frame[0] = 0;
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  return frame;
}

/** Runs one call: the request's frame in, the response's frame out. */
async function call(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: Route,
  options: GrpcFastPathOptions,
  body: Buffer,
): Promise<Buffer> {
  const input = parseFrame(route.method.input, body);
  const timeout = parseTimeout(headerValue(headers["grpc-timeout"]), options.maxTimeoutMs);
  if (timeout.error !== undefined) throw timeout.error;
  const context = lazyContext(stream, headers, route, options, timeout.timeoutMs);
  const result = await (route.fn as UnaryFn)(input, context);
  return frameOf(route.method.output, result);
}

/**
 * A handler context whose costly parts are made only when a handler reads them: the
 * abort signal (linked to the client's stream, the deadline and the shutdown) and the
 * request headers. Unary handlers that read neither, as SuggestTask and ListSuggestions
 * do, then cost no AbortController, DOMException or Headers per call; the profile of
 * the fast path showed those near a tenth of its CPU.
 */
function lazyContext(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: Route,
  options: GrpcFastPathOptions,
  timeoutMs: number | undefined,
): HandlerContext {
  let full: HandlerContext | undefined;
  let requestHeader: Headers | undefined;
  const header = (): Headers => {
    requestHeader ??= new Headers(requestHeaderOf(headers));
    return requestHeader;
  };
  const make = (): HandlerContext => {
    if (full !== undefined) return full;
    const requestSignal = new AbortController();
    if (stream.closed) requestSignal.abort();
    else stream.once("close", () => requestSignal.abort());
    full = createHandlerContext({
      service: route.service,
      method: route.method,
      protocolName: "grpc",
      requestMethod: "POST",
      url: headers[":path"] ?? "",
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      shutdownSignal: options.shutdownSignal,
      requestSignal: requestSignal.signal,
      requestHeader: header(),
    });
    return full;
  };
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  return {
    service: route.service,
    method: route.method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: headers[":path"] ?? "",
    timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
    get signal() {
      return make().signal;
    },
    get requestHeader() {
      return full?.requestHeader ?? header();
    },
    get responseHeader() {
      return make().responseHeader;
    },
    get responseTrailer() {
      return make().responseTrailer;
    },
    get values() {
      return make().values;
    },
  };
}

/** The one message of a unary request, parsed; errors as connect-node answers them. */
function parseFrame(schema: DescMessage, body: Buffer): unknown {
  if (body.length < 5) {
    throw new ConnectError(
      "protocol error: missing input message for unary method",
      Code.Unimplemented,
    );
  }
  if ((body[0] as number) & 0b1) {
    throw new ConnectError(
      "protocol error: received compressed message without grpc-encoding",
      Code.Internal,
    );
  }
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) {
    throw new ConnectError(
      body.length < 5 + length
        ? "protocol error: incomplete envelope"
        : "protocol error: received extra input message for unary method",
      body.length < 5 + length ? Code.InvalidArgument : Code.Unimplemented,
    );
  }
  try {
    return fromBinary(schema, body.subarray(5));
  } catch (err) {
    // A request that does not parse is the caller's error, not the server's.
    throw new ConnectError(
      `parse binary: ${err instanceof Error ? err.message : String(err)}`,
      Code.InvalidArgument,
    );
  }
}

function headerValue(value: string | string[] | undefined): string | null {
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/** The request's ordinary headers (no pseudo-headers), as handlers see them. */
function requestHeaderOf(headers: IncomingHttpHeaders): [string, string][] {
  const entries: [string, string][] = [];
  for (const key in headers) {
    if (key.charCodeAt(0) === 58 /* ':' */) continue;
    const value = headers[key];
    if (typeof value === "string") entries.push([key, value]);
    else if (Array.isArray(value)) for (const v of value) entries.push([key, v]);
  }
  return entries;
}

/** A ConnectError passes; anything else is INTERNAL, with the original kept as its cause. */
function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

/** The status of an error as gRPC headers: code, spec-encoded message and details. */
function statusOf(error: ConnectError): Record<string, string> {
  const status = setTrailerStatus(new Headers(), error);
  const out: Record<string, string> = {};
  status.forEach((value, key) => {
    out[key] = key === "grpc-message" ? encodeGrpcMessage(error.rawMessage) : value;
  });
  return out;
}

/** A trailers-only response carrying the status, its message and its details. */
function respondError(stream: ServerHttp2Stream, error: ConnectError): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond({ ...RESPONSE_HEADERS, ...statusOf(error) }, { endStream: true });
}
