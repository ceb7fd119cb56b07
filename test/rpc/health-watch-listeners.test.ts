import http2 from "node:http2";
import { afterAll, beforeAll, expect, test } from "vitest";
import { storeCondition } from "../../server/redis/store-condition.js";
import { eventually } from "../support/harness.js";
import { cancelWatches, openHealthWatches } from "../support/health-watches.js";
import { useTestServer } from "../support/server-fixture.js";

// Open health watches share one listener on the Redis client and one on the store's
// condition: 50 of them add at most one to each event's listeners, and none is left
// once they have closed.
const t = useTestServer();
let session: http2.ClientHttp2Session;
beforeAll(() => {
  session = http2.connect(t.url);
});
afterAll(() => session.close());

const EVENTS = ["ready", "close", "end", "reconnecting", "error"] as const;

/** The listeners of each Redis client event readiness follows, and of the condition's change. */
function listenerCounts(): number[] {
  const redis = t.server.redis;
  return [
    ...EVENTS.map((e) => redis.listenerCount(e)),
    storeCondition(redis).listenerCount("change"),
  ];
}

test("50 open health watches: at most one more listener on each shared emitter, none left after they close", async () => {
  const before = listenerCounts();
  const watches = await openHealthWatches(session, 50);
  expect(watches.every((w) => w.served)).toBe(true);
  const during = listenerCounts();
  for (const [i, count] of during.entries()) {
    expect(count).toBeLessThanOrEqual((before[i] as number) + 1);
  }
  await cancelWatches(watches);
  await eventually(async () => listenerCounts().every((c, i) => c === before[i]), 5_000).catch(
    () => {},
  );
  expect(listenerCounts()).toEqual(before);
});
