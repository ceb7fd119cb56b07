import http2 from "node:http2";

/** A request message in its gRPC frame (uncompressed). */
export function grpcFrame(message: Buffer): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

/** How a raw gRPC call ended: its status code and message, and every header and trailer. */
export interface RawGrpcAnswer {
  readonly code: number;
  readonly message: string;
  readonly headers: http2.IncomingHttpHeaders;
}

/**
 * One unary binary gRPC call over HTTP/2 with bytes of the test's choosing (a message no
 * client would send), on a session of its own; `extra` adds request headers.
 */
export async function rawGrpc(
  url: string,
  path: string,
  message: Buffer,
  extra: http2.OutgoingHttpHeaders = {},
  options: http2.SecureClientSessionOptions = {},
): Promise<RawGrpcAnswer> {
  const session = http2.connect(url, options);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
        ...extra,
      });
      let headers: http2.IncomingHttpHeaders = {};
      stream.on("response", (h) => {
        headers = h;
      });
      stream.on("trailers", (t) => {
        headers = { ...headers, ...t };
      });
      stream.on("data", () => {});
      stream.on("end", () =>
        resolve({
          code: Number(headers["grpc-status"]),
          message: decodeURIComponent(String(headers["grpc-message"] ?? "")),
          headers,
        }),
      );
      stream.on("error", reject);
      stream.end(grpcFrame(message));
    });
  } finally {
    session.close();
  }
}
