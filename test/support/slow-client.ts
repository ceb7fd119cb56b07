import http2 from "node:http2";
import type { Socket } from "node:net";

/** What became of a raw connection: whether the server closed it within `ms`, and what it said. */
export function outcome(
  socket: Socket,
  ms: number,
): Promise<{ closed: boolean; received: string }> {
  let received = "";
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString("latin1");
  });
  socket.on("error", () => {});
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, received });
    }, ms);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve({ closed: true, received });
    });
  });
}

/** What an unfinished HTTP/2 request was answered, and after how long. */
export interface UnfinishedAnswer {
  readonly ms: number;
  readonly headers: http2.IncomingHttpHeaders;
  readonly body: string;
}

/**
 * An HTTP/2 request to `url` whose body starts (a frame header and 3 of its 100 bytes)
 * and never ends; `options` are the session's (a CA for TLS).
 */
export function unfinishedH2(
  url: string,
  headers: http2.OutgoingHttpHeaders,
  options: http2.SecureClientSessionOptions = {},
): Promise<UnfinishedAnswer> {
  const session = http2.connect(url, options);
  session.on("error", () => {});
  const began = Date.now();
  const stream = session.request({ ":method": "POST", te: "trailers", ...headers });
  stream.write(Buffer.from([0, 0, 0, 0, 100, 1, 2, 3]));
  let got: http2.IncomingHttpHeaders = {};
  let body = "";
  stream.on("response", (h) => {
    got = { ...got, ...h };
  });
  stream.on("trailers", (h) => {
    got = { ...got, ...h };
  });
  stream.on("data", (chunk: Buffer) => {
    body += chunk.toString();
  });
  return new Promise((resolve) => {
    const done = () => {
      session.destroy();
      resolve({ ms: Date.now() - began, headers: got, body });
    };
    stream.on("close", done);
    stream.on("error", done);
  });
}

/** Resolves true when `session` is closed by the server within `ms`, else false. */
export function closedWithin(session: http2.ClientHttp2Session, ms: number): Promise<boolean> {
  session.on("error", () => {});
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    session.once("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
  }).finally(() => session.destroy());
}
