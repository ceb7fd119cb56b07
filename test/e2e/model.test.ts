import fc from "fast-check";
import { afterAll, beforeAll, test } from "vitest";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { ownRedis, putSession, uniqueId } from "../support/harness.js";
import { modelSteps } from "../support/model-steps.js";
import { useTestServer } from "../support/server-fixture.js";
import { startTestRedis } from "../support/store-server.js";
import { Model } from "../support/suggestion-model.js";

/*
 * A model-based test: random sequences of offers (through the tool and hand-written),
 * settlements (through the RPCs and hand-written, fitting or not), records of unknown
 * kinds, deleted projections and kill -9 restarts of Redis run against the service and
 * against a small reference model written from docs/contract.md; after every step the
 * lists must be the model's, and every RPC must answer as the model predicts. The model:
 * test/support/suggestion-model.ts; the steps: test/support/model-steps.ts.
 */

let redisServer: RedisServerProcess & { remove: () => void };
beforeAll(async () => {
  redisServer = await ownRedis();
});
afterAll(async () => {
  await redisServer.kill();
  redisServer.remove();
});
const t = useTestServer({ redisUrl: () => redisServer.url });
beforeAll(() => {
  t.redis.on("error", () => {
    // Refused while Redis restarts; the next command waits for the reconnect.
  });
});

/** kill -9 of Redis, restarted on the same AOF; waits until the service answers again. */
async function restartRedis(): Promise<void> {
  await redisServer.kill();
  const restarted = await startTestRedis({ dir: redisServer.dir, port: redisServer.port });
  redisServer = Object.assign(restarted, { remove: redisServer.remove });
  for (let i = 0; ; i++) {
    try {
      await t.clients.suggestions.listSuggestions({ sessionId: "probe" });
      await t.redis.ping();
      return;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const steps = modelSteps({ t, restartRedis });

test("random offers, settlements, bad records and restarts match the reference model", async () => {
  await fc.assert(
    fc.asyncProperty(fc.commands(steps, { maxCommands: 20, size: "max" }), async (commands) => {
      const sessionId = uniqueId("model");
      await putSession(t.clients, { sessionId });
      await fc.asyncModelRun(() => ({ model: new Model(), real: { sessionId } }), commands);
    }),
    { numRuns: 30 },
  );
}, 120_000);
