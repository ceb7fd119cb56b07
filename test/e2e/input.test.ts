import http from "node:http";
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  FolderKind,
  LocalHostService,
  SessionSchema,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { SuggestServer } from "../../server/server.js";
import {
  type Clients,
  grpcClients,
  ownRedis,
  putSession,
  redisClient,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { grpcFrame, rawGrpc } from "../support/raw-grpc.js";

// A Redis of this file's own, so that "nothing recorded" is an exact count of keys.
let redisServer: Awaited<ReturnType<typeof ownRedis>>;
let redis: RedisClient;
beforeAll(async () => {
  redisServer = await ownRedis();
  redis = redisClient(redisServer.url);
});
afterAll(async () => {
  redis.disconnect();
  await redisServer.stop();
  redisServer.remove();
});

const SUGGEST_TASK = "/oda.suggest.v1.SuggestionService/SuggestTask";

/** A length-delimited protobuf field. */
const field = (tag: number, bytes: Buffer) =>
  Buffer.concat([Buffer.from([tag, bytes.length]), bytes]);

/** A SuggestTaskRequest whose title holds the bytes 0x66 0xff 0xfe (not UTF-8). */
function invalidUtf8Request(sessionId: string): Buffer {
  const context = Buffer.concat([
    field(0x0a, Buffer.from(sessionId)),
    field(0x12, Buffer.from("t-utf8")),
    Buffer.from([0x18, 0x01]),
  ]);
  const args = Buffer.concat([
    field(0x0a, Buffer.from([0x66, 0xff, 0xfe])),
    field(0x12, Buffer.from("b")),
    field(0x1a, Buffer.from("c")),
  ]);
  return Buffer.concat([field(0x0a, context), field(0x12, args)]);
}

/** Bytes that are no protobuf message: field 1, length-delimited, whose length runs out. */
const UNPARSABLE = Buffer.from([0x0a, 0xff]);

/** One POST over HTTP/1.1; the status, headers, trailers and body. */
function overH1(url: string, path: string, headers: Record<string, string>, body: Buffer) {
  return new Promise<{
    status: number;
    headers: http.IncomingHttpHeaders;
    trailers: NodeJS.Dict<string>;
    body: Buffer;
  }>((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method: "POST", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          trailers: res.trailers,
          body: Buffer.concat(chunks),
        }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The status code and message of a gRPC-Web response body (its trailer frame). */
function grpcWebStatus(body: Buffer): { code: number; message: string } {
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at] as number;
    const length = body.readUInt32BE(at + 1);
    if (flags & 0x80) {
      const text = body.subarray(at + 5, at + 5 + length).toString();
      const get = (name: string) => new RegExp(`^${name}: ?(.*)\\r?$`, "mi").exec(text)?.[1] ?? "";
      return { code: Number(get("grpc-status")), message: decodeURIComponent(get("grpc-message")) };
    }
    at += 5 + length;
  }
  throw new Error("no trailer frame");
}

/** Every protocol, answering one request message's bytes with a code and a message. */
const PROTOCOLS: [
  string,
  (url: string, message: Buffer) => Promise<{ code: number; message: string }>,
][] = [
  [
    "binary gRPC over HTTP/2",
    async (url, m) => {
      const { code, message } = await rawGrpc(url, SUGGEST_TASK, m);
      return { code, message };
    },
  ],
  [
    "gRPC over HTTP/1.1",
    async (url, m) => {
      const res = await overH1(
        url,
        SUGGEST_TASK,
        { "content-type": "application/grpc", te: "trailers" },
        grpcFrame(m),
      );
      const status = res.trailers["grpc-status"] ?? String(res.headers["grpc-status"] ?? "");
      const message = res.trailers["grpc-message"] ?? String(res.headers["grpc-message"] ?? "");
      return { code: Number(status), message: decodeURIComponent(message) };
    },
  ],
  [
    "gRPC-Web",
    async (url, m) => {
      const res = await overH1(
        url,
        SUGGEST_TASK,
        { "content-type": "application/grpc-web+proto" },
        grpcFrame(m),
      );
      if (res.headers["grpc-status"] !== undefined) {
        return {
          code: Number(res.headers["grpc-status"]),
          message: decodeURIComponent(String(res.headers["grpc-message"] ?? "")),
        };
      }
      return grpcWebStatus(res.body);
    },
  ],
  [
    "Connect (binary)",
    async (url, m) => {
      const res = await overH1(url, SUGGEST_TASK, { "content-type": "application/proto" }, m);
      const error = JSON.parse(res.body.toString()) as { code: string; message: string };
      expect(res.status).toBe(error.code === "invalid_argument" ? 400 : res.status);
      const code = Object.entries(Code).find(
        ([name]) => name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase() === error.code,
      )?.[1];
      return { code: Number(code), message: error.message };
    },
  ],
];

describe.each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("input through %s", (_, grpcFastPath) => {
  let server: SuggestServer;
  let clients: Clients;
  let sessionId: string;
  beforeAll(async () => {
    server = await startTestServer(redisServer.url, { grpcFastPath });
    clients = grpcClients(server.url);
    sessionId = uniqueId();
    await putSession(clients, { sessionId });
  });
  afterAll(() => server.close());

  test.each(PROTOCOLS)(
    "a body that does not parse, over %s: INVALID_ARGUMENT, nothing recorded",
    async (_, send) => {
      const before = await redis.dbsize();
      const answer = await send(server.url, UNPARSABLE);
      expect(answer.code).toBe(Code.InvalidArgument);
      expect(answer.message).toMatch(/^parse binary: /);
      expect(await redis.dbsize()).toBe(before);
    },
  );

  test.each(PROTOCOLS)(
    "text that is not valid UTF-8, over %s: INVALID_ARGUMENT naming the field",
    async (_, send) => {
      const before = await redis.dbsize();
      const answer = await send(server.url, invalidUtf8Request(sessionId));
      expect(answer).toEqual({
        code: Code.InvalidArgument,
        message: "args.title is not valid UTF-8",
      });
      expect(await redis.dbsize()).toBe(before);
    },
  );

  test("raw invalid UTF-8 in a Connect JSON body: INVALID_ARGUMENT, nothing recorded", async () => {
    const before = await redis.dbsize();
    const body = Buffer.concat([
      Buffer.from(
        `{"context":{"sessionId":"${sessionId}","turnId":"t-raw","role":"AGENT_ROLE_TOP_LEVEL"},"args":{"title":"a`,
      ),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`","tldr":"b","brief":"c"}}`),
    ]);
    const res = await overH1(
      server.url,
      SUGGEST_TASK,
      { "content-type": "application/json" },
      body,
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.toString()).code).toBe("invalid_argument");
    expect(await redis.dbsize()).toBe(before);
  });

  test.each([
    ["gRPC", "grpc"],
    ["Connect", "connect"],
  ] as const)(
    "a 200 KB unknown field in PutSession over %s is neither stored nor echoed",
    async (_, protocol) => {
      const id = uniqueId();
      const session = create(SessionSchema, {
        sessionId: id,
        workspaceId: "ws",
        folder: FolderKind.NORMAL,
      });
      session.$unknown = [
        {
          no: 999,
          wireType: 2,
          data: new BinaryWriter().bytes(new Uint8Array(200 * 1024).fill(0x61)).finish(),
        },
      ];
      expect(toBinary(SessionSchema, session).length).toBeGreaterThan(200 * 1024);
      const transport =
        protocol === "grpc"
          ? clients.transport
          : createConnectTransport({
              baseUrl: server.url,
              httpVersion: "1.1",
              useBinaryFormat: true,
            });
      const answer = await createClient(LocalHostService, transport).putSession({ session });
      expect(answer.session?.$unknown ?? []).toEqual([]);
      expect(toBinary(SessionSchema, answer.session ?? create(SessionSchema)).length).toBeLessThan(
        1024,
      );
      const keys = await redis.keys(`*${id}*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) {
        const type = await redis.type(key);
        const size =
          type === "string"
            ? ((await redis.getBuffer(key))?.length ?? 0)
            : Number(await redis.memory("USAGE", key));
        expect(size).toBeLessThan(10 * 1024);
      }
    },
  );
});
