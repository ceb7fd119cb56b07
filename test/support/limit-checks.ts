import type { Socket } from "node:net";
import { Code } from "@connectrpc/connect";
import { expect } from "vitest";
import { type Clients, connectErrorOf, putSession, uniqueId } from "./harness.js";
import { ids, watch } from "./lists.js";
import { outcome, type UnfinishedAnswer } from "./slow-client.js";
import { offerOne } from "./suggest.js";

// The checks test/e2e/slow-clients.test.ts (cleartext) and test/e2e/tls-limits.test.ts
// (TLS) share: the same limits, reached over either.

/** Client limits set low, so that each test of them takes a second or two. */
export const LOW_LIMITS = {
  firstBytesTimeoutMs: 300,
  headersTimeoutMs: 500,
  requestTimeoutMs: 1_500,
  idleSessionTimeoutMs: 500,
} as const;

/** The message of a request body that did not arrive within 1 s. */
const LATE_MESSAGE = "the request did not arrive in full within 1000 ms";

/** The refusal of a server with MAX_CONNECTIONS=1. */
const CAP_MESSAGE = "suggest-task: too many connections (1 open); try again later";

/**
 * A watch stream that receives nothing for `quietMs` (longer than every timeout of the
 * server) stays open and gets the next change.
 */
export async function expectQuietWatchStays(clients: Clients, quietMs = 2_000): Promise<void> {
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  const w = watch(clients, sessionId);
  await w.waitFor(() => true);
  await new Promise((r) => setTimeout(r, quietMs));
  const { id } = await offerOne(clients, sessionId, "Still watching");
  const next = await w.waitFor((m) => ids(m.open).includes(id));
  expect(ids(next.open)).toEqual([id]);
  w.cancel();
  await w.ended;
}

/** An unfinished gRPC body with `grpc-timeout: 1S` was answered DEADLINE_EXCEEDED in about 1 s. */
export function expectGrpcLate(res: UnfinishedAnswer): void {
  expect(res.headers["grpc-status"]).toBe(String(Code.DeadlineExceeded));
  expect(res.headers["grpc-message"]).toBe(LATE_MESSAGE);
  expect(res.ms).toBeGreaterThanOrEqual(900);
  expect(res.ms).toBeLessThan(2_000);
}

/** An unfinished Connect body with `connect-timeout-ms: 1000` was answered 504 in about 1 s. */
export function expectConnectLate(res: UnfinishedAnswer): void {
  expect(res.headers[":status"]).toBe(504);
  expect(JSON.parse(res.body)).toEqual({ code: "deadline_exceeded", message: LATE_MESSAGE });
  expect(res.ms).toBeLessThan(2_000);
}

/**
 * A Connect request over HTTP/1.1 on `socket` (cleartext or TLS) whose body of 100 bytes
 * stops after 6, with `connect-timeout-ms: 1000`, is answered 504 and closed in about 1 s.
 */
export async function expectConnectH1Late(socket: Socket, path: string): Promise<void> {
  const began = Date.now();
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnect-timeout-ms: 1000\r\ncontent-length: 100\r\n\r\n{"sess`,
  );
  const result = await outcome(socket, 4_000);
  expect(result.closed).toBe(true);
  expect(Date.now() - began).toBeLessThan(2_000);
  expect(result.received).toMatch(/^HTTP\/1\.1 504 /);
  expect(result.received).toContain(`{"code":"deadline_exceeded","message":"${LATE_MESSAGE}"}`);
}

/**
 * A server with MAX_CONNECTIONS=1, its one connection held, refuses a new HTTP/1.1
 * connection (`h1`, cleartext or TLS) with a 503 and a gRPC call with UNAVAILABLE, both
 * naming the cap.
 */
export async function expectCapRefusals(h1: Socket, clients: Clients): Promise<void> {
  h1.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
  const answer = await outcome(h1, 3_000);
  expect(answer.received).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
  expect(answer.received).toContain(CAP_MESSAGE);
  const err = await connectErrorOf(clients.suggestions.listSuggestions({ sessionId: uniqueId() }));
  expect([err.code, err.rawMessage]).toEqual([Code.Unavailable, CAP_MESSAGE]);
}
