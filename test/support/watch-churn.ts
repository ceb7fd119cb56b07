import http2 from "node:http2";
import { connect } from "node:net";
import { grpcFrame } from "./raw-grpc.js";

/** A WatchSuggestionsRequest for `sessionId` in protobuf's binary form (field 1). */
export function watchSuggestionsRequest(sessionId: string): Buffer {
  const id = Buffer.from(sessionId);
  return Buffer.concat([Buffer.from([0x0a, id.length]), id]);
}

/** What a churn of watches saw. */
export interface ChurnResult {
  /** Watches that received their first message before being cancelled. */
  readonly read: number;
  /** Connections the client opened (a new one after each GOAWAY or close). */
  readonly connections: number;
  /** GOAWAYs the client received. */
  readonly goaways: number;
}

/** How a churn runs. */
export interface ChurnOptions {
  /** Watches opened and cancelled in all. */
  readonly count: number;
  /** Watches open at a time on the connection. */
  readonly concurrency?: number;
  /** The chat watched. */
  readonly sessionId: string;
  /** Extra request headers (a bearer token). */
  readonly headers?: http2.OutgoingHttpHeaders;
  /** How each connection is opened (over TLS: the certificate to trust). */
  readonly connect?: http2.SecureClientSessionOptions;
}

/**
 * Opens WatchSuggestions over one raw HTTP/2 connection at a time, reads each watch's
 * first message and cancels it (RST_STREAM CANCEL), `count` times, as a client that
 * churns watches does. A connection that gets a GOAWAY (the server's limit on reset
 * streams) or closes is closed by the client, which goes on over a new one. Resolves
 * once every watch is done and the last connection is destroyed: the client is gone.
 */
export async function churnWatches(url: string, options: ChurnOptions): Promise<ChurnResult> {
  const body = grpcFrame(watchSuggestionsRequest(options.sessionId));
  let session: http2.ClientHttp2Session | undefined;
  let connections = 0;
  let goaways = 0;
  let read = 0;
  let started = 0;
  const current = (): http2.ClientHttp2Session => {
    if (session !== undefined && !session.closed && !session.destroyed) return session;
    const opened = http2.connect(url, options.connect ?? {});
    connections++;
    opened.on("error", () => {});
    opened.on("goaway", () => {
      goaways++;
      if (session === opened) session = undefined;
      opened.close();
    });
    opened.on("close", () => {
      if (session === opened) session = undefined;
    });
    session = opened;
    return opened;
  };
  const one = () =>
    new Promise<void>((resolve) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = current().request({
          ":method": "POST",
          ":path": "/oda.suggest.v1.SuggestionService/WatchSuggestions",
          "content-type": "application/grpc",
          te: "trailers",
          ...options.headers,
        });
      } catch {
        // The connection closed between the check and the request: a new one next time.
        session = undefined;
        resolve();
        return;
      }
      stream.on("error", () => {});
      stream.once("data", () => {
        read++;
        stream.close(http2.constants.NGHTTP2_CANCEL);
      });
      stream.once("close", () => resolve());
      stream.end(body);
    });
  const worker = async () => {
    while (started < options.count) {
      started++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 10 }, worker));
  const last = session as http2.ClientHttp2Session | undefined;
  if (last !== undefined) {
    await new Promise<void>((resolve) => {
      last.once("close", () => resolve());
      last.close();
    });
  }
  return { read, connections, goaways };
}

/**
 * Opens WatchSuggestions as Connect streaming over HTTP/1.1, one connection per watch
 * (`concurrency` at a time), reads the start of its answer and closes the connection
 * (FIN), `count` times: the client leaves and the service must close its side (the
 * client waits 5 s for it at most).
 */
export async function churnH1Watches(
  url: string,
  options: Omit<ChurnOptions, "headers">,
): Promise<{ readonly read: number }> {
  const { hostname, port } = new URL(url);
  const message = watchSuggestionsRequest(options.sessionId);
  const envelope = grpcFrame(message);
  const head =
    "POST /oda.suggest.v1.SuggestionService/WatchSuggestions HTTP/1.1\r\n" +
    `host: ${hostname}:${port}\r\ncontent-type: application/connect+proto\r\n` +
    `connect-protocol-version: 1\r\ncontent-length: ${envelope.length}\r\n\r\n`;
  let read = 0;
  let started = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write(Buffer.concat([Buffer.from(head), envelope])),
      );
      socket.on("error", () => {});
      // A service that never closes its side: the client stops waiting (the test sees it).
      const timer = setTimeout(() => socket.destroy(), 5_000);
      socket.once("data", () => {
        read++;
        socket.end();
      });
      socket.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  const worker = async () => {
    while (started < options.count) {
      started++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 10 }, worker));
  return { read };
}
