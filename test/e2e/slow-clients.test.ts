import http2 from "node:http2";
import { connect, type Socket } from "node:net";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestServer } from "../../server/server.js";
import {
  type Clients,
  connectErrorOf,
  grpcClients,
  putSession,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { ids, watch } from "../support/lists.js";
import { closedWithin, outcome, unfinishedH2 as unfinishedH2To } from "../support/slow-client.js";
import { offerOne } from "../support/suggest.js";

// Clients that are slow or silent at each stage they control, against servers whose
// timeouts are set low so that each test takes a second or two.
const LIMITS = {
  firstBytesTimeoutMs: 300,
  headersTimeoutMs: 500,
  requestTimeoutMs: 1_500,
  idleSessionTimeoutMs: 500,
};

let server: SuggestServer;
let port: number;
beforeAll(async () => {
  server = await startTestServer(undefined, LIMITS);
  port = server.port;
});
afterAll(() => server.close());

function opened(p = port): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(p, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

test("a connection that sends nothing is closed after the first-bytes timeout", async () => {
  const socket = await opened();
  expect(await outcome(socket, 3_000)).toEqual({ closed: true, received: "" });
});

test("a connection that sends one byte (G) is answered 408 and closed after the headers timeout", async () => {
  const socket = await opened();
  socket.write("G");
  const result = await outcome(socket, 3_000);
  expect(result.closed).toBe(true);
  expect(result.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
});

test("a connection that sends half an HTTP/2 preface is closed after the first-bytes timeout", async () => {
  const socket = await opened();
  socket.write("PRI * HTTP/2.0\r\n");
  expect((await outcome(socket, 3_000)).closed).toBe(true);
});

test("HTTP/1.1 headers trickled one byte at a time are cut off with 408 after the headers timeout", async () => {
  const socket = await opened();
  socket.write("POST /oda.suggest.v1.SuggestionService/ListSuggestions HTTP/1.1\r\nhost: x\r\n");
  const trickle = setInterval(() => socket.writable && socket.write("a"), 100);
  socket.write("x-slow: ");
  const result = await outcome(socket, 4_000);
  clearInterval(trickle);
  expect(result.closed).toBe(true);
  expect(result.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
});

test("an HTTP/2 connection that opens no stream is closed after the idle-session timeout", async () => {
  expect(await closedWithin(http2.connect(`http://127.0.0.1:${port}`), 3_000)).toBe(true);
});

test.each([
  ["gRPC over HTTP/2", () => grpcClients(server.url)],
  [
    "Connect over HTTP/1.1",
    (): Clients => ({
      ...grpcClients(server.url),
      suggestions: createClient(
        SuggestionService,
        createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }),
      ),
    }),
  ],
])(
  "a watch stream (%s) that receives nothing for longer than every timeout stays, and gets the next change",
  async (_name, clientsOf) => {
    const clients = clientsOf();
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    const w = watch(clients, sessionId);
    await w.waitFor(() => true);
    await new Promise((r) => setTimeout(r, 2_000));
    const { id } = await offerOne(clients, sessionId, "Still watching");
    const next = await w.waitFor((m) => ids(m.open).includes(id));
    expect(ids(next.open)).toEqual([id]);
    w.cancel();
    await w.ended;
  },
);

/** An HTTP/2 request whose body starts and never ends, to `p` in cleartext. */
function unfinishedH2(headers: http2.OutgoingHttpHeaders, p = port) {
  return unfinishedH2To(`http://127.0.0.1:${p}`, headers);
}

describe("an unfinished request body with a 1 s deadline is answered DEADLINE_EXCEEDED in about a second", () => {
  let patient: SuggestServer;
  beforeAll(async () => {
    patient = await startTestServer(undefined, { ...LIMITS, requestTimeoutMs: 30_000 });
  });
  afterAll(() => patient.close());
  const path = "/oda.suggest.v1.SuggestionService/ListSuggestions";

  test.each([
    ["the gRPC fast path", "application/grpc"],
    ["connect-node (gRPC, JSON)", "application/grpc+json"],
  ])("%s", async (_name, contentType) => {
    const res = await unfinishedH2(
      { ":path": path, "content-type": contentType, "grpc-timeout": "1S" },
      patient.port,
    );
    expect(res.headers["grpc-status"]).toBe("4");
    expect(res.headers["grpc-message"]).toBe("the request did not arrive in full within 1000 ms");
    expect(res.ms).toBeGreaterThanOrEqual(900);
    expect(res.ms).toBeLessThan(2_000);
  });

  test("Connect over HTTP/2", async () => {
    const res = await unfinishedH2(
      { ":path": path, "content-type": "application/json", "connect-timeout-ms": "1000" },
      patient.port,
    );
    expect(res.headers[":status"]).toBe(504);
    expect(JSON.parse(res.body)).toEqual({
      code: "deadline_exceeded",
      message: "the request did not arrive in full within 1000 ms",
    });
    expect(res.ms).toBeLessThan(2_000);
  });

  test("Connect over HTTP/1.1", async () => {
    const socket = await opened(patient.port);
    const began = Date.now();
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnect-timeout-ms: 1000\r\ncontent-length: 100\r\n\r\n{"sess`,
    );
    const result = await outcome(socket, 4_000);
    expect(result.closed).toBe(true);
    expect(Date.now() - began).toBeLessThan(2_000);
    expect(result.received).toMatch(/^HTTP\/1\.1 504 /);
    expect(result.received).toContain(
      '{"code":"deadline_exceeded","message":"the request did not arrive in full within 1000 ms"}',
    );
  });
});

test("an unfinished body with no deadline is answered after the request timeout", async () => {
  const res = await unfinishedH2({
    ":path": "/oda.suggest.v1.SuggestionService/ListSuggestions",
    "content-type": "application/grpc",
  });
  expect(res.headers["grpc-status"]).toBe("4");
  expect(res.ms).toBeGreaterThanOrEqual(1_400);
  expect(res.ms).toBeLessThan(3_000);
});

test("beyond MAX_CONNECTIONS a connection is refused in its own protocol, naming the cap", async () => {
  const capped = await startTestServer(undefined, { maxConnections: 1 });
  const holder = await opened(capped.port);
  await new Promise((r) => setTimeout(r, 100));
  const h1 = await opened(capped.port);
  h1.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
  const answer = await outcome(h1, 3_000);
  expect(answer.received).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
  expect(answer.received).toContain("suggest-task: too many connections (1 open); try again later");
  const err = await connectErrorOf(
    grpcClients(capped.url).suggestions.listSuggestions({ sessionId: uniqueId() }),
  );
  expect([err.code, err.rawMessage]).toEqual([
    Code.Unavailable,
    "suggest-task: too many connections (1 open); try again later",
  ]);
  holder.destroy();
  await capped.close();
});
