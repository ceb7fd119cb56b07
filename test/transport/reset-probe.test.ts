import { readFileSync } from "node:fs";
import type http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, test } from "vitest";
import type { StreamHandler } from "../../server/transport/handler-types.js";
import {
  createOnePortServer,
  createTlsOnePortServer,
  type OnePortServer,
} from "../../server/transport/one-port.js";
import { eventually, tempDir, uniqueId } from "../support/harness.js";
import { hasOpenssl, selfSignedCert } from "../support/tls-cert.js";
import { churnWatches } from "../support/watch-churn.js";

// The one-port server on its own, in cleartext and over TLS: a stream handler answers
// every stream with one message and keeps it open, as a watch does. A client that
// opens and cancels 2,000 of them on a connection passes node's limit on reset streams
// and gets a GOAWAY; it closes that connection, and the server closes its side too:
// no connection is left.
const watchLike: StreamHandler = (stream) => {
  stream.on("error", () => {});
  stream.respond({ ":status": 200, "content-type": "application/grpc" });
  stream.write(Buffer.alloc(5));
  return true;
};

const servers: OnePortServer[] = [];
const folder = tempDir("reset-probe");
afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.tcp.close(resolve));
  folder.remove();
});

/** Listens on a free port of loopback; answers the server's URL. */
async function listening(server: OnePortServer, scheme: string): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.tcp.listen(0, "127.0.0.1", resolve));
  return `${scheme}://127.0.0.1:${(server.tcp.address() as AddressInfo).port}`;
}

/** The server's open connections. */
function connections(server: OnePortServer): Promise<number> {
  return new Promise((resolve, reject) =>
    server.tcp.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );
}

/** Churns 2,000 watches; then no connection may be left. */
async function churnThenNone(
  server: OnePortServer,
  url: string,
  connect: http2.SecureClientSessionOptions = {},
): Promise<void> {
  const churn = await churnWatches(url, { count: 2_000, sessionId: uniqueId(), connect });
  expect(churn.goaways).toBeGreaterThan(0);
  await eventually(async () => (await connections(server)) === 0, 10_000).catch(() => {});
  expect(await connections(server)).toBe(0);
}

describe("a connection that got node's GOAWAY for too many resets is closed once its client has closed it", () => {
  test("in cleartext (h2c)", async () => {
    const server = createOnePortServer((_req, res) => res.end(), {}, watchLike);
    await churnThenNone(server, await listening(server, "http"));
  });

  test.skipIf(!hasOpenssl)("over TLS", async () => {
    const { cert, key } = await selfSignedCert(folder.dir);
    const server = createTlsOnePortServer(
      (_req, res) => res.end(),
      { cert: readFileSync(cert), key: readFileSync(key) },
      watchLike,
    );
    await churnThenNone(server, await listening(server, "https"), { ca: readFileSync(cert) });
  });
});
