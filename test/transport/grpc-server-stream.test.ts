import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  SuggestionService,
  WatchSuggestionsRequestSchema,
  WatchSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { serveServerStream } from "../../server/transport/grpc-fast-path/grpc-server-stream.js";
import type { Pushable } from "../../server/transport/handler-types.js";
import { grpcFrame } from "../support/raw-grpc.js";

/*
 * The fast path's server stream (server/transport/grpc-fast-path/grpc-server-stream.ts) on a bare HTTP/2
 * server, its handler a stream of the test's making: pushed messages written as they come
 * (within `pushTo` too), the end's status in trailers, a message that cannot be written
 * ending that call alone with INTERNAL (the iterator path's answer), the steering a push
 * asks for within `pushTo` done once `pushTo` has answered, and a stream that cannot push
 * read with `for await`. The service's own Watch runs through it in
 * test/e2e/slow-watcher.test.ts and the gRPC interop tests.
 */

type Handler = (request: unknown, context: HandlerContext) => AsyncIterable<unknown>;
let handler: Handler = () => {
  throw new Error("no handler");
};
const server = http2.createServer();
server.on("stream", (stream, headers) => {
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("end", () => {
    const route = {
      service: SuggestionService,
      method: SuggestionService.method.watchSuggestions,
      fn: (request: unknown, context: HandlerContext) => handler(request, context),
    };
    const options = { shutdownSignal: new AbortController().signal };
    void serveServerStream(stream, headers, route, options, Buffer.concat(chunks));
  });
});
let url = "";
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A response naming one open suggestion, `id`. */
const lists = (id: string) =>
  create(WatchSuggestionsResponseSchema, { open: [{ id, sessionId: "s" }] });

/** A Watch call: the ids of the messages it got, and the status its trailers carried. */
async function watchCall(): Promise<{ ids: string[]; status: string; message: string }> {
  const session = http2.connect(url);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/oda.suggest.v1.SuggestionService/WatchSuggestions",
        "content-type": "application/grpc",
        te: "trailers",
      });
      const request = create(WatchSuggestionsRequestSchema, { sessionId: "s" });
      stream.end(grpcFrame(Buffer.from(toBinary(WatchSuggestionsRequestSchema, request))));
      let body = Buffer.alloc(0);
      let status: http2.IncomingHttpHeaders = {};
      stream.on("data", (chunk: Buffer) => {
        body = Buffer.concat([body, chunk]);
      });
      stream.on("response", (headers) => {
        status = headers;
      });
      stream.on("trailers", (trailers) => {
        status = trailers;
      });
      stream.on("error", reject);
      stream.on("close", () => {
        const ids: string[] = [];
        for (let at = 0; at + 5 <= body.length; ) {
          const end = at + 5 + body.readUInt32BE(at + 1);
          const message = fromBinary(WatchSuggestionsResponseSchema, body.subarray(at + 5, end));
          ids.push(message.open[0]?.id ?? "");
          at = end;
        }
        resolve({
          ids,
          status: String(status["grpc-status"]),
          message: decodeURIComponent(String(status["grpc-message"] ?? "")),
        });
      });
    });
  } finally {
    session.close();
  }
}

/** A handler whose stream is pushed: `run` gets the sink, and the steering it answered. */
function pushed(
  run: (sink: Parameters<Pushable["pushTo"]>[0]) => void,
  steering = { resume: () => {}, stop: () => {} },
): Handler {
  return () =>
    ({
      [Symbol.asyncIterator]: () => {
        throw new Error("a pushed stream is not read");
      },
      pushTo: (sink) => {
        run(sink);
        return steering;
      },
    }) as AsyncIterable<unknown> & Pushable;
}

test("pushed within pushTo and after it: every message written, then OK in trailers", async () => {
  handler = pushed((sink) => {
    sink.push(lists("a"));
    setTimeout(() => {
      sink.push(lists("b"));
      sink.end();
    }, 20);
  });
  expect(await watchCall()).toEqual({ ids: ["a", "b"], status: "0", message: "" });
});

test("an end with an error answers its status and message", async () => {
  handler = pushed((sink) => {
    sink.push(lists("a"));
    setTimeout(
      () => sink.end(new ConnectError("the call ran past its deadline", Code.DeadlineExceeded)),
      20,
    );
  });
  expect(await watchCall()).toEqual({
    ids: ["a"],
    status: String(Code.DeadlineExceeded),
    message: "the call ran past its deadline",
  });
});

test("a message that cannot be written ends the call INTERNAL and stops the stream, once pushTo has answered", async () => {
  const steps: string[] = [];
  const unwritable = {
    get open(): never {
      throw new Error("no encoding for this");
    },
  };
  handler = pushed(
    (sink) => {
      steps.push(`push answered ${sink.push(unwritable)}`);
      sink.push(lists("a"));
    },
    {
      resume: () => steps.push("resume"),
      stop: () => steps.push("stop"),
    },
  );
  const answer = await watchCall();
  expect(answer.ids).toEqual([]);
  expect(answer.status).toBe(String(Code.Internal));
  expect(steps).toEqual(["push answered false", "stop"]);
});

test("a stream that cannot push is read with for await", async () => {
  handler = () => ({
    pushTo: () => undefined,
    async *[Symbol.asyncIterator]() {
      yield lists("a");
      yield lists("b");
    },
  });
  expect(await watchCall()).toEqual({ ids: ["a", "b"], status: "0", message: "" });
});
