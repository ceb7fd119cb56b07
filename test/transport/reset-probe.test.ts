import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createOnePortServer, type OnePortServer } from "../../server/transport/one-port.js";
import { eventually, uniqueId } from "../support/harness.js";
import { churnWatches } from "../support/watch-churn.js";

// The one-port server on its own: a stream handler that answers every stream with one
// message and keeps it open, as a watch does. A client that opens and cancels 2,000
// of them on a connection passes node's limit on reset streams and gets a GOAWAY; it
// closes that connection, and the server closes its side too: no connection is left.
let server: OnePortServer;
let url: string;
beforeAll(async () => {
  server = createOnePortServer(
    (_req, res) => res.end(),
    {},
    (stream) => {
      stream.on("error", () => {});
      stream.respond({ ":status": 200, "content-type": "application/grpc" });
      stream.write(Buffer.alloc(5));
      return true;
    },
  );
  await new Promise<void>((resolve) => server.tcp.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.tcp.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.tcp.close(() => resolve())));

/** The server's open connections. */
function connections(): Promise<number> {
  return new Promise((resolve, reject) =>
    server.tcp.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );
}

test("a connection that got node's GOAWAY for too many resets is closed once its client has closed it", async () => {
  const churn = await churnWatches(url, { count: 2_000, sessionId: uniqueId() });
  expect(churn.goaways).toBeGreaterThan(0);
  await eventually(async () => (await connections()) === 0, 10_000).catch(() => {});
  expect(await connections()).toBe(0);
});
