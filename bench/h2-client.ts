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

/** How one unary call ended. */
export interface UnaryAnswer {
  /** The gRPC status; -1 when the stream failed or carried none. */
  readonly status: number;
  /** The response message (payload only); empty when there was none. */
  readonly message: Buffer;
  readonly error?: string;
}

/** One unary gRPC call with a pre-framed body; never rejects (failures are answers). */
export function unaryCall(
  session: ClientHttp2Session,
  path: string,
  body: Buffer,
): Promise<UnaryAnswer> {
  return new Promise((resolve) => {
    const stream = session.request(requestHeaders(path));
    const chunks: Buffer[] = [];
    let headers: IncomingHttpHeaders | undefined;
    let trailers: IncomingHttpHeaders | undefined;
    stream.on("response", (h) => {
      headers = h;
    });
    stream.on("trailers", (t) => {
      trailers = t;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", (err: Error) =>
      resolve({ status: -1, message: Buffer.alloc(0), error: err.message }),
    );
    stream.on("close", () => {
      const status = grpcStatusOf(headers, trailers) ?? -1;
      const data = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      const message = data.length >= 5 ? data.subarray(5) : Buffer.alloc(0);
      const text = trailers?.["grpc-message"] ?? headers?.["grpc-message"];
      resolve(
        status === 0
          ? { status, message }
          : { status, message, error: `grpc-status ${status}: ${String(text ?? "")}` },
      );
    });
    stream.end(body);
  });
}

/**
 * A server-streaming call: `onMessage` gets every response message as it arrives; the
 * answer resolves with the final status when the stream ends.
 */
export function streamCall(
  session: ClientHttp2Session,
  path: string,
  body: Buffer,
  onMessage: (message: Buffer) => void,
): { done: Promise<UnaryAnswer>; cancel: () => void } {
  const stream = session.request(requestHeaders(path));
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
  const done = new Promise<UnaryAnswer>((resolve) => {
    stream.on("error", (err: Error) =>
      resolve({ status: -1, message: Buffer.alloc(0), error: err.message }),
    );
    stream.on("close", () =>
      resolve({ status: grpcStatusOf(headers, trailers) ?? -1, message: Buffer.alloc(0) }),
    );
  });
  stream.end(body);
  return { done, cancel: () => stream.close(http2.constants.NGHTTP2_CANCEL) };
}
