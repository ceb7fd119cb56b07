import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ConfigError } from "../../server/config.js";
import { clusterEnabled, connectRedis } from "../../server/redis/redis-client.js";
import {
  type RedisServerProcess,
  startRedisServer,
} from "../../server/redis/redis-server-process.js";
import { ownRedis, startTestServer, tempDir } from "../support/harness.js";

/*
 * SINGLE_REDIS_SCRIPTS lets a script touch keys of several cluster slots, which a Redis
 * started with `cluster-enabled yes` refuses (CROSSSLOT) even through a plain `redis://`
 * URL: the service then refuses to start, naming the setting, rather than fail every
 * write of a workspace's chat later. A cluster-enabled node of this file's own (no
 * slots assigned: INFO answers all the same) and a plain Redis beside it.
 */

let node: RedisServerProcess;
let plain: Awaited<ReturnType<typeof ownRedis>>;
const folder = tempDir("cluster-enabled");
beforeAll(async () => {
  node = await startRedisServer({
    dir: folder.dir,
    extraArgs: [
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      join(folder.dir, "nodes.conf"),
    ],
  });
  plain = await ownRedis();
});
afterAll(async () => {
  await node?.stop();
  folder.remove();
  await plain?.stop();
  plain?.remove();
});

test("INFO tells a cluster-enabled Redis from a plain one, and says nothing of one that is down", async () => {
  const [enabled, single] = [connectRedis(node.url), connectRedis(plain.url)];
  try {
    expect(await clusterEnabled(enabled)).toBe(true);
    expect(await clusterEnabled(single)).toBe(false);
  } finally {
    enabled.disconnect();
    single.disconnect();
  }
  const down = connectRedis("redis://127.0.0.1:1");
  down.on("error", () => {});
  try {
    expect(await clusterEnabled(down)).toBeUndefined();
  } finally {
    down.disconnect();
  }
});

test("SINGLE_REDIS_SCRIPTS on a cluster-enabled Redis: the service refuses to start, naming it", async () => {
  const err = await startTestServer(node.url, { singleRedisScripts: true }).then(
    async (s) => {
      await s.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).message).toBe(
    `SINGLE_REDIS_SCRIPTS is for a single Redis, and ${node.url} is cluster-enabled (its scripts would be refused with CROSSSLOT); unset SINGLE_REDIS_SCRIPTS, or name a cluster as redis+cluster://`,
  );
});

test("without it, or on a plain Redis, the service starts", async () => {
  for (const [url, singleRedisScripts] of [
    [node.url, false],
    [plain.url, true],
  ] as const) {
    const s = await startTestServer(url, { singleRedisScripts });
    await s.close();
  }
});
