import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createRedisClient } from "../../server/store/scripts.js";
import { type LocalSentinelSet, startSentinelSet } from "../support/redis-sentinel.js";

// The sentinels ask for a password of their own, the data nodes for another: the URL's
// credentials reach the data nodes, REDIS_SENTINEL_* the sentinels, and neither works in
// the other's place.

const DATA_PASSWORD = "data-s3cret";
const SENTINEL_PASSWORD = "sentinel-s3cret";
let set: LocalSentinelSet;

beforeAll(async () => {
  set = await startSentinelSet({
    replicas: 1,
    sentinels: 2,
    dataPassword: DATA_PASSWORD,
    sentinelPassword: SENTINEL_PASSWORD,
  });
}, 60_000);
afterAll(() => set?.close());

function urlWith(userinfo: string): string {
  return set.url.replace("redis+sentinel://", `redis+sentinel://${userinfo}@`);
}

/** The first `sentinelError` or `error` of a client that cannot get going, and the client. */
async function firstFailure(client: Redis): Promise<string> {
  try {
    return await new Promise<string>((resolve) => {
      client.on("sentinelError", (err: Error) => resolve(err.message));
      client.on("error", (err: Error) => resolve(err.message));
    });
  } finally {
    client.disconnect();
  }
}

test("the URL's password reaches the primary the sentinels name; REDIS_SENTINEL_PASSWORD the sentinels", async () => {
  const client = createRedisClient(urlWith(`:${DATA_PASSWORD}`), undefined, {
    sentinelPassword: SENTINEL_PASSWORD,
  }) as Redis;
  try {
    await client.set("sentinel-auth", "written through the sentinels");
    const primary = set.node(set.nodes[0]?.port ?? 0);
    expect(await primary.get("sentinel-auth")).toBe("written through the sentinels");
    expect(/^role:master/m.test(await primary.info("replication"))).toBe(true);
    primary.disconnect();
    expect((client.stream as { remotePort?: number }).remotePort).toBe(await set.primaryPort());
  } finally {
    client.disconnect();
  }
});

test("without the sentinels' password, the sentinels refuse to name the primary", async () => {
  const client = createRedisClient(urlWith(`:${DATA_PASSWORD}`)) as Redis;
  expect(await firstFailure(client)).toMatch(
    /^failed to connect to sentinel 127\.0\.0\.1:\d+ because NOAUTH/,
  );
});

test("the data nodes' password is not the sentinels' (nor the other way round)", async () => {
  const swapped = createRedisClient(urlWith(`:${SENTINEL_PASSWORD}`), undefined, {
    sentinelPassword: DATA_PASSWORD,
  }) as Redis;
  expect(await firstFailure(swapped)).toMatch(
    /^failed to connect to sentinel 127\.0\.0\.1:\d+ because WRONGPASS/,
  );
  const dataless = createRedisClient(urlWith(`:${SENTINEL_PASSWORD}`), undefined, {
    sentinelPassword: SENTINEL_PASSWORD,
  }) as Redis;
  expect(await firstFailure(dataless)).toMatch(/WRONGPASS/);
});
