import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { type Socket, connect as tcpConnect } from "node:net";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ChatHostService, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestServer } from "../../server/server.js";
import { type Clients, startTestServer, tempDir } from "../support/harness.js";
import {
  expectCapRefusals,
  expectConnectH1Late,
  expectConnectLate,
  expectGrpcLate,
  expectQuietWatchStays,
  LOW_LIMITS,
} from "../support/limit-checks.js";
import { closedWithin, outcome, unfinishedH2 } from "../support/slow-client.js";
import { hasOpenssl, selfSignedCert } from "../support/tls-cert.js";

// The limits of test/e2e/slow-clients.test.ts, over TLS (TLS_CERT_FILE, TLS_KEY_FILE):
// clients slow or silent at each stage, against servers whose limits are set low.
const LIMITS = LOW_LIMITS;
const LIST = "/oda.suggest.v1.SuggestionService/ListSuggestions";

describe.skipIf(!hasOpenssl)("client limits over TLS", () => {
  let dir: ReturnType<typeof tempDir>;
  let files: { cert: string; key: string };
  let ca: Buffer;
  let server: SuggestServer;
  const tlsServer = async (overrides: Parameters<typeof startTestServer>[1]) =>
    startTestServer(undefined, { tlsCertFile: files.cert, tlsKeyFile: files.key, ...overrides });
  beforeAll(async () => {
    dir = tempDir("tls-limits");
    files = await selfSignedCert(dir.dir);
    ca = readFileSync(files.cert);
    server = await tlsServer(LIMITS);
  });
  afterAll(async () => {
    await server?.close();
    dir?.remove();
  });

  const tcp = (port = server.port): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = tcpConnect(port, "127.0.0.1", () => resolve(socket));
      socket.once("error", reject);
    });
  /** A TLS connection, its handshake done with `alpn` offered. */
  const secured = (alpn: string, port = server.port): Promise<TLSSocket> =>
    new Promise((resolve, reject) => {
      const socket = tlsConnect({ port, host: "127.0.0.1", ca, ALPNProtocols: [alpn] }, () =>
        resolve(socket),
      );
      socket.once("error", reject);
    });
  const clientsOver = (transport: Clients["transport"]): Clients => ({
    transport,
    suggestions: createClient(SuggestionService, transport),
    local: createClient(LocalHostService, transport),
    host: createClient(ChatHostService, transport),
  });
  const grpcOverTls = (url = server.url) =>
    clientsOver(createGrpcTransport({ baseUrl: url, nodeOptions: { ca } }));

  test("a connection that sends nothing (no TLS handshake) is closed after the first-bytes timeout", async () => {
    expect(await outcome(await tcp(), 3_000)).toEqual({ closed: true, received: "" });
  });

  test("a connection that sends part of a TLS ClientHello is closed after the first-bytes timeout", async () => {
    const socket = await tcp();
    socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
    expect((await outcome(socket, 3_000)).closed).toBe(true);
  });

  test("a TLS connection (h2) that sends no HTTP/2 preface is closed after the first-bytes timeout", async () => {
    const socket = await secured("h2");
    const began = Date.now();
    expect((await outcome(socket, 3_000)).closed).toBe(true);
    // The first-bytes timeout (300 ms), not the idle-session one (500 ms) counted after it.
    expect(Date.now() - began).toBeLessThan(750);
  });

  test("HTTP/1.1 over TLS: one byte (G) is answered 408 and closed after the headers timeout", async () => {
    const socket = await secured("http/1.1");
    socket.write("G");
    const result = await outcome(socket, 3_000);
    expect(result.closed).toBe(true);
    expect(result.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  });

  test("HTTP/1.1 over TLS: headers trickled one byte at a time are cut off with 408", async () => {
    const socket = await secured("http/1.1");
    socket.write(`POST ${LIST} HTTP/1.1\r\nhost: x\r\nx-slow: `);
    const trickle = setInterval(() => socket.writable && socket.write("a"), 100);
    const result = await outcome(socket, 4_000);
    clearInterval(trickle);
    expect(result.closed).toBe(true);
    expect(result.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  });

  test("HTTP/1.1 over TLS: a keep-alive connection idle after its request is closed (5 s keep-alive timeout)", async () => {
    const socket = await secured("http/1.1");
    socket.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
    const result = await outcome(socket, 8_000);
    expect(result.received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(result.closed).toBe(true);
  }, 10_000);

  test("shutdown closes an HTTP/1.1 keep-alive connection over TLS idle after its request at once, not at its 5 s timeout", async () => {
    const draining = await tlsServer({ ...LIMITS, shutdownGraceMs: 10_000 });
    const socket = await secured("http/1.1", draining.port);
    socket.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
    const answered = await new Promise<string>((resolve) =>
      socket.once("data", (chunk: Buffer) => resolve(chunk.toString())),
    );
    expect(answered).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const began = performance.now();
    await draining.close();
    await closed;
    expect(performance.now() - began).toBeLessThan(2_000);
  }, 15_000);

  test("an HTTP/2 session over TLS that opens no stream is closed after the idle-session timeout", async () => {
    expect(await closedWithin(http2.connect(server.url, { ca }), 3_000)).toBe(true);
  });

  test.each([
    ["gRPC over HTTP/2", () => grpcOverTls()],
    [
      "Connect over HTTP/1.1",
      (): Clients => ({
        ...grpcOverTls(),
        suggestions: createClient(
          SuggestionService,
          createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", nodeOptions: { ca } }),
        ),
      }),
    ],
  ])(
    "a watch stream (%s, TLS) that receives nothing for longer than every timeout stays",
    (_name, clientsOf) => expectQuietWatchStays(clientsOf()),
  );

  describe("an unfinished request body with a 1 s deadline is DEADLINE_EXCEEDED in about a second", () => {
    let patient: SuggestServer;
    beforeAll(async () => {
      patient = await tlsServer({ ...LIMITS, requestTimeoutMs: 30_000 });
    });
    afterAll(() => patient?.close());

    test.each([
      ["the gRPC fast path", "application/grpc"],
      ["connect-node (gRPC, JSON)", "application/grpc+json"],
    ])("%s over TLS", async (_name, contentType) => {
      const res = await unfinishedH2(
        patient.url,
        { ":path": LIST, "content-type": contentType, "grpc-timeout": "1S" },
        { ca },
      );
      expectGrpcLate(res);
    });

    test("Connect over HTTP/2 over TLS", async () => {
      const res = await unfinishedH2(
        patient.url,
        { ":path": LIST, "content-type": "application/json", "connect-timeout-ms": "1000" },
        { ca },
      );
      expectConnectLate(res);
    });

    test("Connect over HTTP/1.1 over TLS", async () => {
      await expectConnectH1Late(await secured("http/1.1", patient.port), LIST);
    });
  });

  test("an unfinished body with no deadline is answered after the request timeout", async () => {
    const res = await unfinishedH2(
      server.url,
      { ":path": LIST, "content-type": "application/grpc" },
      { ca },
    );
    expect(res.headers["grpc-status"]).toBe("4");
    expect(res.ms).toBeGreaterThanOrEqual(1_400);
    expect(res.ms).toBeLessThan(3_000);
  });

  test("beyond MAX_CONNECTIONS a TLS connection is refused in its own protocol, naming the cap", async () => {
    const capped = await tlsServer({ maxConnections: 1 });
    const holder = await tcp(capped.port);
    await new Promise((r) => setTimeout(r, 100));
    const h1 = await secured("http/1.1", capped.port);
    await expectCapRefusals(h1, grpcOverTls(capped.url));
    holder.destroy();
    await capped.close();
  });
});
