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

interface Route {
  readonly service: ServedService["service"];
  readonly method: DescMethod;
  readonly fn: UnaryFn;
}

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
 * compression, a unary method. Everything else (Connect, gRPC-Web, JSON, streams,
 * compressed calls) is handed to connect-node. Pinned by test/grpc-fast-path.test.ts
 * and every gRPC interop test, which run through it.
 */
export function createGrpcFastPath(
  services: readonly ServedService[],
  options: GrpcFastPathOptions,
): StreamHandler {
  const routes = new Map<string, Route>();
  for (const { service, impl } of services) {
    for (const method of service.methods) {
      const fn = (impl as unknown as Record<string, UnaryFn | undefined>)[method.localName];
      if (method.methodKind === "unary" && fn !== undefined) {
        routes.set(`/${service.typeName}/${method.name}`, { service, method, fn: fn.bind(impl) });
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
    void call(stream, headers, route, options, Buffer.concat(chunks, size)).then(
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
  const requestSignal = new AbortController();
  stream.once("close", () => requestSignal.abort());
  const context = createHandlerContext({
    service: route.service,
    method: route.method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: headers[":path"] ?? "",
    ...(timeout.timeoutMs === undefined ? {} : { timeoutMs: timeout.timeoutMs }),
    shutdownSignal: options.shutdownSignal,
    requestSignal: requestSignal.signal,
    requestHeader: requestHeaderOf(headers),
  });
  const result = await route.fn(input, context);
  const output = isMessage(result, route.method.output)
    ? result
    : create(route.method.output, result as never);
  const bytes = toBinary(route.method.output, output);
  const frame = Buffer.allocUnsafe(5 + bytes.length);
  frame[0] = 0;
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  return frame;
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

/** A trailers-only response carrying the status, its message and its details. */
function respondError(stream: ServerHttp2Stream, error: ConnectError): void {
  if (stream.destroyed || stream.headersSent) return;
  const status = setTrailerStatus(new Headers(), error);
  const out: Record<string, string | number> = { ...RESPONSE_HEADERS };
  status.forEach((value, key) => {
    out[key] = key === "grpc-message" ? encodeGrpcMessage(error.rawMessage) : value;
  });
  stream.respond(out, { endStream: true });
}
