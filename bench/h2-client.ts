/**
 * A lean gRPC client on raw `node:http2` for the bench's generators: pre-encoded bodies
 * (bench/grpc-frames.ts), no per-call machinery beyond one HTTP/2 stream, so that the
 * generator costs a small fraction of what the server spends on the same call.
 */
import http2, { type ClientHttp2Session, type IncomingHttpHeaders } from "node:http2";
import { GrpcFrameReader, grpcStatusOf } from "./grpc-frames.js";

/** The request headers of every bench call (h2load sends the same ones). */
function requestHeaders(path: string): http2.OutgoingHttpHeaders {
  return {
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
  };
}

/** Opens `count` HTTP/2 connections to `address` (host:port) and waits until each is up. */
export async function connectAll(address: string, count: number): Promise<ClientHttp2Session[]> {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ClientHttp2Session>((resolve, reject) => {
          const session = http2.connect(`http://${address}`);
          session.once("connect", () => resolve(session));
          session.once("error", reject);
        }),
    ),
  );
}

/** How one call ended. */
export interface UnaryAnswer {
  /** The gRPC status; -1 when the stream failed or carried none. */
  readonly status: number;
  /** The (first) response message, payload only; empty when there was none. */
  readonly message: Buffer;
  /** Set unless the status is 0: the stream's error or the status and its message. */
  readonly error?: string;
}

/**
 * A call of a pre-framed body: `onMessage` gets every response message as it arrives;
 * `done` resolves with the final status when the stream ends, never rejects.
 */
export function streamCall(
  session: ClientHttp2Session,
  path: string,
  body: Buffer,
  onMessage: (message: Buffer) => void,
  extraHeaders: Readonly<Record<string, string>> = {},
): { done: Promise<Omit<UnaryAnswer, "message">>; cancel: () => void } {
  const stream = session.request({ ...requestHeaders(path), ...extraHeaders });
  const reader = new GrpcFrameReader();
  let headers: IncomingHttpHeaders | undefined;
  let trailers: IncomingHttpHeaders | undefined;
  stream.on("response", (h) => {
    headers = h;
  });
  stream.on("trailers", (t) => {
    trailers = t;
  });
  stream.on("data", (chunk: Buffer) => {
    for (const message of reader.push(chunk)) onMessage(message);
  });
  const done = new Promise<Omit<UnaryAnswer, "message">>((resolve) => {
    stream.on("error", (err: Error) => resolve({ status: -1, error: err.message }));
    stream.on("close", () => {
      const status = grpcStatusOf(headers, trailers) ?? -1;
      const text = trailers?.["grpc-message"] ?? headers?.["grpc-message"];
      resolve(
        status === 0
          ? { status }
          : { status, error: `grpc-status ${status}: ${String(text ?? "")}` },
      );
    });
  });
  stream.end(body);
  return { done, cancel: () => stream.close(http2.constants.NGHTTP2_CANCEL) };
}

/** One unary gRPC call with a pre-framed body; never rejects (failures are answers). */
export async function unaryCall(
  session: ClientHttp2Session,
  path: string,
  body: Buffer,
  extraHeaders: Readonly<Record<string, string>> = {},
): Promise<UnaryAnswer> {
  let message: Buffer | undefined;
  const { done } = streamCall(
    session,
    path,
    body,
    (m) => {
      message ??= m;
    },
    extraHeaders,
  );
  return { ...(await done), message: message ?? Buffer.alloc(0) };
}
