import { Writable } from "node:stream";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { pino } from "pino";
import { describe, expect, test } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestTaskRequestSchema } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { grpcWebStatus, rawGrpcBody } from "../support/raw-grpc.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";
import { offer } from "../support/suggest.js";

// Bad input is the caller's error whatever its encoding: INVALID_ARGUMENT, compressed or
// not, over every protocol, and each such call is logged and counted like any other.

const SUGGEST = "/oda.suggest.v1.SuggestionService/SuggestTask";

/** A SuggestTask request that parses, on a session that need not exist. */
function goodRequest(): Buffer {
  return Buffer.from(
    toBinary(
      SuggestTaskRequestSchema,
      create(SuggestTaskRequestSchema, {
        context: { sessionId: uniqueId(), turnId: "t-bad", role: AgentRole.TOP_LEVEL },
        args: { title: "A title", tldr: "A tldr", brief: "A brief of some length" },
      }),
    ),
  );
}

/** SuggestTaskRequest whose `args.title` holds the bytes 0x66 0xff 0xfe (not UTF-8). */
function invalidUtf8(): Buffer {
  const text = (tag: number, bytes: Buffer) =>
    Buffer.concat([Buffer.from([tag, bytes.length]), bytes]);
  const context = Buffer.concat([
    text(0x0a, Buffer.from(uniqueId())),
    text(0x12, Buffer.from("t-utf8")),
    Buffer.from([0x18, 0x01]),
  ]);
  const args = Buffer.concat([
    text(0x0a, Buffer.from([0x66, 0xff, 0xfe])),
    text(0x12, Buffer.from("b")),
    text(0x1a, Buffer.from("c")),
  ]);
  return Buffer.concat([text(0x0a, context), text(0x12, args)]);
}

/** Bad messages and the texts they are refused with, whatever their encoding. */
const BAD: readonly (readonly [string, () => Buffer, string])[] = [
  // Cut inside `args.brief`: a length-delimited field that promises more than is there.
  ["a truncated message", () => goodRequest().subarray(0, -3), "parse binary: premature EOF"],
  ["invalid UTF-8", invalidUtf8, "args.title is not valid UTF-8"],
];

/** The encodings the service accepts, each with how a client compresses. */
const ENCODINGS: readonly (readonly [string, (b: Buffer) => Buffer])[] = [
  ["identity", (b) => b],
  ["gzip", (b) => gzipSync(b)],
  ["br", (b) => brotliCompressSync(b)],
];

/** Bytes that are neither gzip nor brotli. */
const GARBAGE = Buffer.from("this is not compressed data, not even close to it", "utf8");

/** A message in its gRPC (or gRPC-Web, or Connect stream) envelope, flagged compressed or not. */
function envelope(message: Buffer, compressed: boolean): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressed ? 1 : 0, 0);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** A raw gRPC call's status: code and message. */
async function grpcStatus(
  ...args: Parameters<typeof rawGrpcBody>
): Promise<{ code: number; message: string }> {
  const { code, message } = await rawGrpcBody(...args);
  return { code, message };
}

// A Redis of this file's own, so that "nothing recorded" is an exact count of keys.
const own = useOwnRedis();

describe.each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("bad input over %s", (_, grpcFastPath) => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const t = useTestServer({
    redisUrl: () => own.url,
    settings: () => ({ grpcFastPath, logger: pino({ level: "info" }, sink) }),
  });

  /** SuggestTask calls logged and counted with code invalid_argument, so far. */
  async function invalidArgumentCalls(): Promise<{ logged: number; counted: number }> {
    const logged = lines.filter(
      (l) => l.msg === "call" && l.method === SUGGEST && l.code === "invalid_argument",
    ).length;
    const metric = await t.server.telemetry.registry.getSingleMetric("suggest_calls_total")?.get();
    const counted =
      metric?.values.find(
        (v) => v.labels.method === SUGGEST && v.labels.code === "invalid_argument",
      )?.value ?? 0;
    return { logged, counted };
  }

  /**
   * Runs a bad call, expecting its answer; then that nothing was recorded, that it is one
   * more line in the call log and one more in `suggest_calls_total`, and that the server
   * still serves.
   */
  async function expectRefused(
    call: () => Promise<{ code: number; message: string }>,
    expected: { code: number; message: string },
  ): Promise<void> {
    const keys = await t.redis.dbsize();
    const before = await invalidArgumentCalls();
    expect(await call()).toEqual(expected);
    expect(await t.redis.dbsize()).toBe(keys);
    expect(await invalidArgumentCalls()).toEqual({
      logged: before.logged + 1,
      counted: before.counted + 1,
    });
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    expect((await offer(t.clients, { sessionId })).result).toMatch(/^Suggested "/);
  }

  describe.each(BAD)("%s", (_, message, text) => {
    test.each(ENCODINGS)("over gRPC, grpc-encoding %s: INVALID_ARGUMENT", async (name, pack) => {
      await expectRefused(
        () =>
          grpcStatus(
            t.url,
            SUGGEST,
            envelope(pack(message()), name !== "identity"),
            name === "identity" ? {} : { "grpc-encoding": name },
          ),
        { code: Code.InvalidArgument, message: text },
      );
    });

    test.each(ENCODINGS)(
      "over gRPC-Web, grpc-encoding %s: INVALID_ARGUMENT",
      async (name, pack) => {
        await expectRefused(
          async () =>
            grpcWebStatus(
              await fetch(`${t.url}${SUGGEST}`, {
                method: "POST",
                headers: {
                  "content-type": "application/grpc-web+proto",
                  ...(name === "identity" ? {} : { "grpc-encoding": name }),
                },
                body: envelope(pack(message()), name !== "identity"),
              }),
            ),
          { code: Code.InvalidArgument, message: text },
        );
      },
    );

    test.each(ENCODINGS)(
      "over Connect, content-encoding %s: HTTP 400 invalid_argument",
      async (name, pack) => {
        await expectRefused(
          async () => {
            const res = await fetch(`${t.url}${SUGGEST}`, {
              method: "POST",
              headers: {
                "content-type": "application/proto",
                ...(name === "identity" ? {} : { "content-encoding": name }),
              },
              body: pack(message()),
            });
            const json = (await res.json()) as { code: string; message: string };
            expect({ status: res.status, code: json.code }).toEqual({
              status: 400,
              code: "invalid_argument",
            });
            return { code: Code.InvalidArgument, message: json.message };
          },
          { code: Code.InvalidArgument, message: text },
        );
      },
    );
  });

  test.each(["gzip", "br"])(
    "compressed data that does not decompress (%s) is INVALID_ARGUMENT over gRPC and Connect",
    async (name) => {
      await expectRefused(
        () => grpcStatus(t.url, SUGGEST, envelope(GARBAGE, true), { "grpc-encoding": name }),
        { code: Code.InvalidArgument, message: "decompression failed" },
      );
      await expectRefused(
        async () => {
          const res = await fetch(`${t.url}${SUGGEST}`, {
            method: "POST",
            headers: { "content-type": "application/proto", "content-encoding": name },
            body: GARBAGE,
          });
          const json = (await res.json()) as { code: string; message: string };
          expect(res.status).toBe(400);
          return {
            code: json.code === "invalid_argument" ? Code.InvalidArgument : -1,
            message: json.message,
          };
        },
        { code: Code.InvalidArgument, message: "decompression failed" },
      );
    },
  );

  test("JSON that is not UTF-8, gzip-compressed over Connect: INVALID_ARGUMENT, logged", async () => {
    const json = Buffer.concat([
      Buffer.from('{"context":{"sessionId":"s","turnId":"t"},"args":{"title":"'),
      Buffer.from([0x66, 0xff, 0xfe]),
      Buffer.from('","tldr":"b","brief":"c"}}'),
    ]);
    await expectRefused(
      async () => {
        const res = await fetch(`${t.url}${SUGGEST}`, {
          method: "POST",
          headers: { "content-type": "application/json", "content-encoding": "gzip" },
          body: gzipSync(json),
        });
        const body = (await res.json()) as { code: string; message: string };
        expect({ status: res.status, code: body.code }).toEqual({
          status: 400,
          code: "invalid_argument",
        });
        return { code: Code.InvalidArgument, message: body.message };
      },
      { code: Code.InvalidArgument, message: "The encoded data was not valid for encoding utf-8" },
    );
  });

  test("deflate is not an accepted encoding: UNIMPLEMENTED naming the ones that are", async () => {
    const answer = await rawGrpcBody(t.url, SUGGEST, envelope(deflateSync(goodRequest()), true), {
      "grpc-encoding": "deflate",
    });
    expect({ code: answer.code, message: answer.message }).toEqual({
      code: Code.Unimplemented,
      message: 'unknown compression "deflate": supported encodings are gzip,br',
    });
  });

  test("a good request compressed gzip or br is served", async () => {
    for (const [name, pack] of ENCODINGS) {
      const sessionId = uniqueId();
      await putSession(t.clients, { sessionId });
      const message = Buffer.from(
        toBinary(
          SuggestTaskRequestSchema,
          create(SuggestTaskRequestSchema, {
            context: { sessionId, turnId: `t-${name}`, role: AgentRole.TOP_LEVEL },
            args: { title: `Compressed ${name}`, tldr: "r", brief: "b" },
          }),
        ),
      );
      const answer = await rawGrpcBody(
        t.url,
        SUGGEST,
        envelope(pack(message), name !== "identity"),
        name === "identity" ? {} : { "grpc-encoding": name },
      );
      expect({ name, code: answer.code }).toEqual({ name, code: 0 });
    }
  });
});
