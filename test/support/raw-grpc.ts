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
export function rawGrpc(
  url: string,
  path: string,
  message: Buffer,
  extra: http2.OutgoingHttpHeaders = {},
  options: http2.SecureClientSessionOptions = {},
): Promise<RawGrpcAnswer> {
  return rawGrpcBody(url, path, grpcFrame(message), extra, options);
}

/**
 * The same with the request's body as given, frames and all (a compressed frame, say).
 */
export async function rawGrpcBody(
  url: string,
  path: string,
  body: Buffer,
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
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

/**
 * The status of a gRPC-Web answer read whole: in its headers (trailers-only) or in its
 * trailer frame (flag 0x80).
 */
export async function grpcWebStatus(res: Response): Promise<{ code: number; message: string }> {
  const fromHeaders = res.headers.get("grpc-status");
  if (fromHeaders !== null) {
    return {
      code: Number(fromHeaders),
      message: decodeURIComponent(res.headers.get("grpc-message") ?? ""),
    };
  }
  const body = Buffer.from(await res.arrayBuffer());
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    if (((body[at] as number) & 0x80) !== 0) {
      const trailers = new Map(
        body
          .subarray(at + 5, at + 5 + length)
          .toString()
          .split("\r\n")
          .filter((l) => l.includes(":"))
          .map((l) => [
            l.slice(0, l.indexOf(":")).trim().toLowerCase(),
            l.slice(l.indexOf(":") + 1).trim(),
          ]),
      );
      return {
        code: Number(trailers.get("grpc-status")),
        message: decodeURIComponent(trailers.get("grpc-message") ?? ""),
      };
    }
    at += 5 + length;
  }
  return { code: -1, message: "no status" };
}
