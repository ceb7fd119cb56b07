import http2 from "node:http2";
import { connect, type Socket } from "node:net";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestServer } from "../../server/server.js";
import { type Clients, grpcClients, startTestServer } from "../support/harness.js";
import {
  expectCapRefusals,
  expectConnectH1Late,
  expectConnectLate,
  expectGrpcLate,
  expectQuietWatchStays,
  LOW_LIMITS,
} from "../support/limit-checks.js";
import { closedWithin, outcome, unfinishedH2 as unfinishedH2To } from "../support/slow-client.js";

// Clients that are slow or silent at each stage they control, against servers whose
// timeouts are set low so that each test takes a second or two.
const LIMITS = LOW_LIMITS;

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
  (_name, clientsOf) => expectQuietWatchStays(clientsOf()),
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
    expectGrpcLate(res);
  });

  test("Connect over HTTP/2", async () => {
    const res = await unfinishedH2(
      { ":path": path, "content-type": "application/json", "connect-timeout-ms": "1000" },
      patient.port,
    );
    expectConnectLate(res);
  });

  test("Connect over HTTP/1.1", async () => {
    await expectConnectH1Late(await opened(patient.port), path);
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
  await expectCapRefusals(h1, grpcClients(capped.url));
  holder.destroy();
  await capped.close();
});
