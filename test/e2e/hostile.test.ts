import http2 from "node:http2";
import { connect } from "node:net";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, test } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  ListSuggestionsResponseSchema,
  SuggestionService,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { rawGrpcBody } from "../support/raw-grpc.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer } from "../support/suggest.js";

const t = useTestServer();

/** The server still answers a real call. */
async function stillServing(): Promise<void> {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const res = await offer(t.clients, { sessionId });
  expect(res.result).toMatch(/^Suggested "/);
}

async function postJson(path: string, body: string): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${t.server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: res.status, json: await res.json() };
}

describe("hostile input is answered cleanly and the server keeps serving", () => {
  test("a 10 MB request", async () => {
    // A client of its own that can hold 10 MB in flight (Node's default session memory
    // is 10 MB: a client with less fails on its own side before the server answers).
    const big = createClient(
      SuggestionService,
      createGrpcTransport({ baseUrl: t.server.url, nodeOptions: { maxSessionMemory: 100 } }),
    );
    const err = await big
      .suggestTask({
        context: { sessionId: uniqueId(), turnId: "t", role: AgentRole.TOP_LEVEL },
        args: { title: "t", tldr: "r", brief: "x".repeat(10 * 1024 * 1024) },
      })
      .catch((e: unknown) => ConnectError.from(e));
    expect(Code[(err as ConnectError).code]).toBe("ResourceExhausted");
    expect((err as ConnectError).rawMessage).toMatch(/larger than configured readMaxBytes 262144$/);
    const json = await postJson(
      "/oda.suggest.v1.SuggestionService/ListSuggestions",
      JSON.stringify({ sessionId: "x".repeat(10 * 1024 * 1024) }),
    );
    expect(json.status).toBe(429);
    await stillServing();
  });

  test("a compressed request that inflates past the size bound (a decompression bomb)", async () => {
    // 8 MB of zeros: about 8 KB gzip-compressed, a few dozen bytes as brotli.
    const zeros = Buffer.alloc(8 * 1024 * 1024);
    for (const [name, packed] of [
      ["gzip", gzipSync(zeros)],
      ["br", brotliCompressSync(zeros)],
    ] as const) {
      const frame = Buffer.concat([Buffer.from([1, 0, 0, 0, 0]), packed]);
      frame.writeUInt32BE(packed.length, 1);
      const answer = await rawGrpcBody(
        t.server.url,
        "/oda.suggest.v1.SuggestionService/SuggestTask",
        frame,
        { "grpc-encoding": name },
      );
      expect({ name, code: Code[answer.code], message: answer.message }).toEqual({
        name,
        code: "ResourceExhausted",
        message: "message is larger than configured readMaxBytes 262144 after decompression",
      });
      const res = await fetch(`${t.server.url}/oda.suggest.v1.SuggestionService/ListSuggestions`, {
        method: "POST",
        headers: { "content-type": "application/proto", "content-encoding": name },
        body: packed,
      });
      expect({ name, status: res.status }).toEqual({ name, status: 429 });
    }
    await stillServing();
  });

  test("a malformed HTTP/2 frame sequence", async () => {
    // The server answers a protocol error with a GOAWAY frame (type 7) and drops the session.
    const frameTypes = await new Promise<number[]>((resolve) => {
      let received = Buffer.alloc(0);
      const types = () => {
        const found: number[] = [];
        for (let at = 0; at + 9 <= received.length; ) {
          const length = received.readUIntBE(at, 3);
          found.push(received[at + 3] as number);
          at += 9 + length;
        }
        return found;
      };
      const socket = connect(t.server.port, "127.0.0.1", () => {
        socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        // A SETTINGS frame of 5 bytes (it must be a multiple of 6).
        socket.write(Buffer.from([0, 0, 5, 0x4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]));
      });
      socket.on("data", (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        if (types().includes(7)) {
          socket.destroy();
          resolve(types());
        }
      });
      socket.on("error", () => resolve(types()));
      socket.on("close", () => resolve(types()));
    });
    expect(frameTypes).toContain(7);
    await stillServing();
  });

  test("garbage that is neither HTTP/1.1 nor HTTP/2", async () => {
    await new Promise<void>((resolve) => {
      const socket = connect(t.server.port, "127.0.0.1", () =>
        socket.write(Buffer.alloc(4096, 0xff)),
      );
      socket.on("data", () => {});
      socket.on("error", () => resolve());
      socket.on("close", () => resolve());
    });
    await stillServing();
  });

  test("1,000 streams opened at once on one connection", async () => {
    const session = http2.connect(t.server.url);
    const sessionId = uniqueId();
    const body = JSON.stringify({ sessionId });
    const outcomes = await Promise.all(
      Array.from(
        { length: 1000 },
        () =>
          new Promise<string>((resolve) => {
            const stream = session.request({
              ":method": "POST",
              ":path": "/oda.suggest.v1.SuggestionService/ListSuggestions",
              "content-type": "application/json",
            });
            let status = "";
            stream.on("response", (h) => {
              status = String(h[":status"]);
            });
            stream.on("data", () => {});
            stream.on("end", () => resolve(status));
            stream.on("error", () => resolve("refused"));
            stream.end(body);
          }),
      ),
    );
    session.close();
    // Each stream is answered, or refused by the stream limit; none hangs.
    expect(outcomes.filter((o) => o !== "200" && o !== "refused")).toEqual([]);
    expect(outcomes.filter((o) => o === "200").length).toBeGreaterThan(0);
    await stillServing();
  });

  test("deeply nested JSON", async () => {
    const depth = 100_000;
    const nested = `${'{"args":'.repeat(1)}${"[".repeat(depth)}${"]".repeat(depth)}}`;
    const res = await postJson("/oda.suggest.v1.SuggestionService/SuggestTask", nested);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: "invalid_argument" });
    await stillServing();
  });

  test("unknown fields are skipped, in JSON and in binary", async () => {
    // Skipping them keeps older servers working with newer clients.
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    await offer(t.clients, { sessionId });
    const res = await postJson(
      "/oda.suggest.v1.SuggestionService/ListSuggestions",
      JSON.stringify({ sessionId, notAField: { deep: [1, 2, 3] } }),
    );
    expect(res.status).toBe(200);
    expect((res.json as { open: unknown[] }).open).toHaveLength(1);
    // ListSuggestionsRequest { session_id = 1; field 99 (unknown) = "zzz" }
    const binary = Buffer.concat([
      Buffer.from([0x0a, sessionId.length]),
      Buffer.from(sessionId),
      Buffer.from([0x9a, 0x06, 3]),
      Buffer.from("zzz"),
    ]);
    const proto = await fetch(`${t.server.url}/oda.suggest.v1.SuggestionService/ListSuggestions`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: binary,
    });
    expect(proto.status).toBe(200);
    expect(
      fromBinary(ListSuggestionsResponseSchema, new Uint8Array(await proto.arrayBuffer())).open,
    ).toHaveLength(1);
    await stillServing();
  });

  test("a wrong content type and an unknown path", async () => {
    const wrongType = await fetch(
      `${t.server.url}/oda.suggest.v1.SuggestionService/ListSuggestions`,
      {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "hello",
      },
    );
    expect(wrongType.status).toBe(415);
    const unknown = await fetch(`${t.server.url}/nothing/here`, { method: "POST" });
    expect(unknown.status).toBe(404);
    await stillServing();
  });
});
