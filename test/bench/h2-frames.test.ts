import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { pathOf, requestFrame } from "../../bench/grpc-frames.js";
import { FramedGrpcConnection, requestHeaderBlock } from "../../bench/h2-frames.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  DismissSuggestionRequestSchema,
  SuggestionService,
  SuggestTaskRequestSchema,
  SuggestTaskResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { grpcClients, putSession, startTestServer, uniqueId } from "../support/harness.js";
import { grpcFrame } from "../support/raw-grpc.js";

type Handler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

const servers: http2.Http2Server[] = [];
const connections: FramedGrpcConnection[] = [];

afterEach(async () => {
  for (const c of connections.splice(0)) c.close();
  await Promise.all(
    servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
  );
});

/** A node:http2 server whose streams `handler` answers, and a framed connection to it. */
async function connectTo(handler: Handler, settings: http2.Settings = {}) {
  const server = http2.createServer({ settings });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => sessions.add(s));
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {}); // a reset stream errs on the server side too
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      (stream as http2.ServerHttp2Stream & { body?: Buffer }).body = Buffer.concat(chunks);
      handler(stream, headers);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const connection = await FramedGrpcConnection.connect(`127.0.0.1:${port}`);
  connections.push(connection);
  return { connection, sessions, port };
}

const bodyOf = (stream: http2.ServerHttp2Stream) =>
  (stream as http2.ServerHttp2Stream & { body?: Buffer }).body ?? Buffer.alloc(0);

/** Answers the request's own body and headers back as one message, status 0. */
const echo: Handler = (stream, headers) => {
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
  const seen = [headers[":path"], headers["content-type"], headers.te, headers[":authority"]];
  stream.end(grpcFrame(Buffer.from(`${seen.join(" ")}|${bodyOf(stream).toString("hex")}`)));
};

describe("FramedGrpcConnection", () => {
  it("sends the path, gRPC headers and body, and answers the one message of status 0", async () => {
    const { connection, port } = await connectTo(echo);
    const body = grpcFrame(Buffer.from("hello"));
    const answer = await connection.call("/pkg.Service/Method", body);
    expect(answer.error).toBeUndefined();
    expect(answer.status).toBe(0);
    expect(answer.message.toString()).toBe(
      `/pkg.Service/Method application/grpc trailers 127.0.0.1:${port}|${body.toString("hex")}`,
    );
  });

  it("answers a trailers-only status as a failure", async () => {
    const { connection } = await connectTo((stream) =>
      stream.respond(
        { ":status": 200, "content-type": "application/grpc", "grpc-status": "5" },
        { endStream: true },
      ),
    );
    const answer = await connection.call("/pkg.Service/Method", grpcFrame(Buffer.alloc(0)));
    expect(answer.status).toBe(-1);
    expect(answer.error).toBe("the answer had no message (trailers alone: a status other than 0)");
  });

  it("answers a reset stream as a failure with its code", async () => {
    const { connection } = await connectTo((stream) =>
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM),
    );
    const answer = await connection.call("/a/b", grpcFrame(Buffer.alloc(0)));
    expect(answer.error).toBe(
      `the server reset the stream (code ${http2.constants.NGHTTP2_REFUSED_STREAM})`,
    );
  });

  it("keeps within the server's connection window: 300 calls of 1 KB at once all answered", async () => {
    const { connection } = await connectTo(echo);
    const bodies = Array.from({ length: 300 }, (_, i) => grpcFrame(Buffer.alloc(1024, i % 256)));
    const answers = await Promise.all(bodies.map((b) => connection.call("/a/b", b)));
    answers.forEach((answer, i) => {
      expect(answer.status).toBe(0);
      expect(answer.message.toString().split("|")[1]).toBe((bodies[i] as Buffer).toString("hex"));
    });
  });

  it("answers every call in flight, and every later one, as failed once the server goes", async () => {
    const { connection, sessions } = await connectTo(() => {
      for (const s of sessions) s.destroy();
    });
    const answer = await connection.call("/a/b", grpcFrame(Buffer.alloc(0)));
    expect(answer.status).toBe(-1);
    expect(answer.error).toMatch(/^the (connection (closed|failed)|server sent GOAWAY)/);
    const later = await connection.call("/a/b", grpcFrame(Buffer.alloc(0)));
    expect(later.error).toMatch(/^the (connection (closed|failed)|server sent GOAWAY)/);
    // A loop of such calls still lets a timer run: each answer comes in a later turn.
    let timerRan = false;
    setTimeout(() => {
      timerRan = true;
    }, 0);
    for (let calls = 0; !timerRan && calls < 100_000; calls++) {
      await connection.call("/a/b", grpcFrame(Buffer.alloc(0)));
    }
    expect(timerRan).toBe(true);
  });
});

describe("FramedGrpcConnection within the server's limits", () => {
  it("keeps to the server's limit of concurrent streams, sending the rest as streams end", async () => {
    let open = 0;
    let most = 0;
    const { connection } = await connectTo(
      (stream, headers) => {
        open++;
        most = Math.max(most, open);
        stream.on("close", () => open--);
        setTimeout(() => echo(stream, headers), 5);
      },
      { maxConcurrentStreams: 2 },
    );
    // The server's SETTINGS arrive with its first frames; one call first lets them land.
    expect((await connection.call("/a/b", grpcFrame(Buffer.from("x")))).status).toBe(0);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => connection.call("/a/b", grpcFrame(Buffer.from([i])))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 10 }, () => 0));
    expect(most).toBe(2);
  });

  it("refuses a body that does not fit one DATA frame, and the connection goes on", async () => {
    const { connection } = await connectTo(echo);
    const big = await connection.call("/a/b", grpcFrame(Buffer.alloc(20_000)));
    expect(big.error).toBe("the body does not fit one DATA frame in the server's window");
    expect((await connection.call("/a/b", grpcFrame(Buffer.from("ok")))).status).toBe(0);
  });

  it("after a graceful GOAWAY answers the streams the server took, and fails later calls", async () => {
    const { connection, sessions } = await connectTo((stream, headers) => {
      for (const s of sessions) s.close();
      echo(stream, headers);
    });
    const taken = await connection.call("/a/b", grpcFrame(Buffer.from("first")));
    expect(taken.status).toBe(0);
    const later = await connection.call("/a/b", grpcFrame(Buffer.from("second")));
    expect(later.error).toMatch(/^the (server sent GOAWAY \(code 0\)|connection closed)$/);
  });

  it("fails the connection, without a crash, on an answer it cannot read", async () => {
    const { connection } = await connectTo((stream) => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" });
      stream.end(Buffer.from([1, 0, 0, 0, 1, 0])); // a compressed gRPC message
    });
    const answer = await connection.call("/a/b", grpcFrame(Buffer.alloc(0)));
    expect(answer.error).toBe("an unreadable answer: a compressed gRPC frame arrived");
  });
});

describe("FramedGrpcConnection against the service", () => {
  it("answers a recorded offer with its message, and a refusal (an error status) as failed", async () => {
    const server = await startTestServer();
    try {
      const sessionId = uniqueId();
      await putSession(grpcClients(server.url), { sessionId });
      const connection = await FramedGrpcConnection.connect(new URL(server.url).host);
      connections.push(connection);
      const offer = (role: AgentRole, toolCallId: string) =>
        connection.call(
          pathOf(SuggestionService.method.suggestTask),
          requestFrame(SuggestTaskRequestSchema, {
            context: { sessionId, turnId: "t1", role, toolCallId },
            args: { title: "Fix CI", tldr: "It is red", brief: "Make CI green." },
          }),
        );
      const recorded = await offer(AgentRole.TOP_LEVEL, "c1");
      expect(recorded.status).toBe(0);
      const response = fromBinary(SuggestTaskResponseSchema, recorded.message);
      expect(response.suggestion?.title).toBe("Fix CI");
      const refused = await offer(AgentRole.HELPER, "c2");
      expect(refused.status).toBe(-1);
      expect(refused.error).toBe(
        "the answer had no message (trailers alone: a status other than 0)",
      );
      const unknown = await connection.call(
        pathOf(SuggestionService.method.dismissSuggestion),
        requestFrame(DismissSuggestionRequestSchema, { sessionId, suggestionId: "nope" }),
      );
      expect(unknown.status).toBe(-1);
    } finally {
      await server.close();
    }
  });
});

describe("requestHeaderBlock", () => {
  it("spells a path longer than a one-byte length with a multi-byte HPACK integer", () => {
    const path = `/${"x".repeat(200)}`;
    const block = requestHeaderBlock("h:1", path);
    // :method, :scheme, then :path's name (static 4) and its length 201 = 127 + 74.
    expect([...block.subarray(0, 6)]).toEqual([0x83, 0x86, 0x04, 0x7f, 74, 0x2f]);
  });
});
