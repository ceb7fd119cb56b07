import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  grpcClients,
  putSession,
  type ServiceProcess,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { offerOne } from "../support/suggest.js";

// 2,000 idle connections against a service limited to 1,024 open files: the connections
// beyond its cap are refused, the rest are dropped after the first-bytes timeout, and a
// client already connected keeps being served the whole time.
const FLOOD = 2_000;
let service: ServiceProcess;
beforeAll(async () => {
  service = await spawnService(sharedRedisUrl(), { FIRST_BYTES_TIMEOUT_MS: "4000" }, [
    "prlimit",
    "--nofile=1024:1024",
  ]);
});
afterAll(() => service.kill("SIGTERM"));

/** Opens a connection that sends nothing; resolves once it is open or has failed. */
function idle(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => {});
    socket.once("connect", () => resolve(socket));
    socket.once("close", () => resolve(socket));
  });
}

/** What a new HTTP/1.1 connection is answered. */
function probe(port: number): Promise<string> {
  return new Promise((resolve) => {
    let received = "";
    const socket = connect(port, "127.0.0.1", () =>
      socket.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n"),
    );
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString();
      if (received.includes("\r\n\r\n")) socket.destroy();
    });
    socket.on("error", () => {});
    socket.once("close", () => resolve(received));
  });
}

test("2,000 idle sockets under ulimit -n 1024: a connected client keeps succeeding, newcomers get a clear refusal", async () => {
  const port = Number(new URL(service.url).port);
  const clients = grpcClients(service.url);
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });

  const sockets = await Promise.all(Array.from({ length: FLOOD }, () => idle(port)));
  await new Promise((r) => setTimeout(r, 1_500));
  const held = sockets.filter((s) => !s.destroyed).length;
  expect(held).toBeGreaterThan(500);
  expect(held).toBeLessThan(1_024);

  // While they are held: the connected client's calls all succeed, a newcomer is refused.
  for (let i = 0; i < 10; i++) {
    const list = await clients.suggestions.listSuggestions({ sessionId });
    expect(list.open).toHaveLength(i === 0 ? 0 : 1);
    if (i === 0) await offerOne(clients, sessionId, "Held on");
  }
  const refused = await probe(port);
  expect(refused).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
  expect(refused).toContain("suggest-task: too many connections");

  // After the first-bytes timeout the idle ones are gone, and newcomers are served. Some
  // connect late (the kernel dropped their SYN while the backlog was full, and they retry
  // after 1, 3, 7 s...) or wait in the backlog until the server has a descriptor free, so
  // each gets its 4 s from its own accept: the wait is generous, never needed in full.
  const by = Date.now() + 30_000;
  while (sockets.some((s) => !s.destroyed) && Date.now() < by) {
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(sockets.filter((s) => !s.destroyed).length).toBe(0);
  expect(await probe(port)).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  const fresh = grpcClients(service.url);
  expect((await fresh.suggestions.listSuggestions({ sessionId })).open).toHaveLength(1);
  expect(service.child.exitCode).toBe(null);
}, 60_000);
