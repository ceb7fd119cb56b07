import http2 from "node:http2";
import { grpcFrame } from "./raw-grpc.js";

/** How one health Watch was answered. */
export type WatchAnswer =
  | { readonly served: true; readonly stream: http2.ClientHttp2Stream }
  | { readonly served: false; readonly code: number; readonly message: string };

/**
 * Opens `count` grpc.health.v1 Health/Watch streams for the empty service name over the
 * raw HTTP/2 `session`, `headers` added to each; resolves once each has its first
 * message (served: the stream stays open for the caller to cancel) or its status
 * (refused).
 */
export function openHealthWatches(
  session: http2.ClientHttp2Session,
  count: number,
  headers: http2.OutgoingHttpHeaders = {},
): Promise<WatchAnswer[]> {
  const one = () =>
    new Promise<WatchAnswer>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/grpc.health.v1.Health/Watch",
        "content-type": "application/grpc",
        te: "trailers",
        ...headers,
      });
      let answer: http2.IncomingHttpHeaders = {};
      const ended = (h: http2.IncomingHttpHeaders) => {
        answer = { ...answer, ...h };
        if (answer["grpc-status"] === undefined) return;
        resolve({
          served: false,
          code: Number(answer["grpc-status"]),
          message: decodeURIComponent(String(answer["grpc-message"] ?? "")),
        });
      };
      stream.on("response", ended);
      stream.on("trailers", ended);
      stream.once("data", () => resolve({ served: true, stream }));
      stream.on("error", reject);
      stream.end(grpcFrame(Buffer.alloc(0)));
    });
  return Promise.all(Array.from({ length: count }, one));
}

/** Cancels the served watches among `answers`; resolves once each stream has closed. */
export async function cancelWatches(answers: readonly WatchAnswer[]): Promise<void> {
  await Promise.all(
    answers.map((a) =>
      a.served
        ? new Promise<void>((resolve) => {
            a.stream.on("error", () => {});
            a.stream.once("close", () => resolve());
            a.stream.close(http2.constants.NGHTTP2_CANCEL);
          })
        : undefined,
    ),
  );
}
