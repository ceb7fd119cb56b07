import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  eventually,
  grpcClients,
  type ServiceProcess,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { closeWaitOn, openFilesOf } from "../support/process-files.js";
import { churnH1Watches, churnWatches } from "../support/watch-churn.js";

// A client that opens a watch, reads it and cancels it, over and over, passes node's
// limit on streams a peer resets: the service answers with a GOAWAY about every
// thousand streams, and the client closes that connection and opens another. The
// service closes its side too: once the client has gone no socket is left in
// CLOSE-WAIT, and its open files are back to what they were. The same over HTTP/1.1,
// whose clients close their connections mid-watch; through the gRPC fast path and
// through connect-node (GRPC_FAST_PATH=0) alike.
// connect-node costs more per call: 3,000 watches pass node's limit three times over.
describe.each([
  ["the gRPC fast path", {}, 10_000],
  ["connect-node", { GRPC_FAST_PATH: "0" }, 3_000],
])("through %s", (_, env: Record<string, string>, watches: number) => {
  let service: ServiceProcess;
  beforeAll(async () => {
    service = await spawnService(sharedRedisUrl(), env);
  });
  afterAll(() => service.kill("SIGTERM"));

  /** The service's open files once it has settled after a client left. */
  async function settled(pid: number, port: number, before: number): Promise<void> {
    // Generous bounds: a socket goes as soon as its client has closed it.
    await eventually(async () => closeWaitOn(pid, port) === 0, 10_000).catch(() => {});
    expect(closeWaitOn(pid, port)).toBe(0);
    await eventually(async () => openFilesOf(pid) <= before, 10_000).catch(() => {});
    expect(openFilesOf(pid)).toBeLessThanOrEqual(before);
  }

  test(`${watches.toLocaleString("en")} watches opened and cancelled on HTTP/2, then the client gone: no socket in CLOSE-WAIT, open files back to their count`, async () => {
    const pid = service.child.pid as number;
    const port = Number(new URL(service.url).port);
    const sessionId = uniqueId();
    // Calls first, so that what opens on first use (Redis's subscriber) is counted.
    await grpcClients(service.url).suggestions.listSuggestions({ sessionId });
    await churnWatches(service.url, { count: 50, sessionId });
    await eventually(async () => closeWaitOn(pid, port) === 0, 10_000);
    const before = openFilesOf(pid);

    const churn = await churnWatches(service.url, { count: watches, sessionId });
    expect(churn.read).toBeGreaterThan(watches * 0.9);
    // node's limit on reset streams was passed: the service sent GOAWAYs.
    expect(churn.goaways).toBeGreaterThan(0);
    await settled(pid, port, before);
  }, 180_000);

  test("500 watches over HTTP/1.1 whose clients close their connections: no socket in CLOSE-WAIT, open files back to their count", async () => {
    const pid = service.child.pid as number;
    const port = Number(new URL(service.url).port);
    const sessionId = uniqueId();
    await churnH1Watches(service.url, { count: 20, sessionId });
    await eventually(async () => closeWaitOn(pid, port) === 0, 10_000);
    const before = openFilesOf(pid);

    const churn = await churnH1Watches(service.url, { count: 500, sessionId });
    expect(churn.read).toBe(500);
    await settled(pid, port, before);
  }, 60_000);
});
