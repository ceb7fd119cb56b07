import { Cluster, Redis } from "ioredis";
import { expect, test } from "vitest";
import { ConfigError, configFromEnv } from "../../server/config.js";
import { defaultClusterOptions } from "../../server/redis/redis-client.js";
import { unixSocketUrl } from "../../server/redis/redis-server-process.js";
import { parseRedisUrl, RedisUrlError, redact } from "../../server/redis/redis-url.js";
import { createRedisClient } from "../../server/store/scripts.js";

test("redis:// and rediss:// name one Redis, as before", () => {
  expect(parseRedisUrl("redis://127.0.0.1:6400")).toEqual({
    kind: "single",
    url: "redis://127.0.0.1:6400",
  });
  expect(parseRedisUrl("rediss://:pw@cache.internal:6380/2").kind).toBe("single");
});

test("unix:/// names one Redis by its Unix socket's absolute path", () => {
  expect(parseRedisUrl("unix:///var/run/redis/redis.sock")).toEqual({
    kind: "single",
    url: "unix:///var/run/redis/redis.sock",
    socket: "/var/run/redis/redis.sock",
  });
  expect(parseRedisUrl("unix:///tmp/a%20b/r.sock")).toMatchObject({ socket: "/tmp/a b/r.sock" });
  // A private redis-server's socket URL names its path whatever the folder's characters.
  const dir = "/tmp/a b%c#d?e";
  expect(parseRedisUrl(unixSocketUrl(`${dir}/redis.sock`))).toMatchObject({
    socket: `${dir}/redis.sock`,
  });
  for (const raw of ["unix://host/r.sock", "unix:r.sock", "unix:///tmp/r.sock?password=x"]) {
    expect(() => parseRedisUrl(raw), raw).toThrow(
      new RedisUrlError(
        `must name a Unix socket by its absolute path, as unix:///var/run/redis.sock (got "${raw}")`,
      ),
    );
  }
  expect(() => configFromEnv({ REDIS_URL: "unix:r.sock" })).toThrow(
    /^REDIS_URL must name a Unix socket by its absolute path/,
  );
});

test("redis+cluster:// names a cluster by its seeds, with optional credentials and TLS", () => {
  expect(
    parseRedisUrl("redis+cluster://10.0.0.1:7000,10.0.0.2:7001, node-3.internal:7002"),
  ).toEqual({
    kind: "cluster",
    seeds: [
      { host: "10.0.0.1", port: 7000 },
      { host: "10.0.0.2", port: 7001 },
      { host: "node-3.internal", port: 7002 },
    ],
    username: undefined,
    password: undefined,
    tls: false,
  });
  expect(parseRedisUrl("rediss+cluster://svc:p%40ss@[::1]:7000/")).toEqual({
    kind: "cluster",
    seeds: [{ host: "::1", port: 7000 }],
    username: "svc",
    password: "p@ss",
    tls: true,
  });
  expect(parseRedisUrl("redis+cluster://:secret@h:1")).toMatchObject({
    username: undefined,
    password: "secret",
  });
});

test("a malformed URL is refused with a message that says what is expected", () => {
  const bad = [
    "http://127.0.0.1:6379",
    "not a url",
    "redis+cluster://",
    "redis+cluster://host",
    "redis+cluster://h:1,,h:2",
    "redis+cluster://h:70000",
    "redis+cluster://h:1/0",
  ];
  for (const raw of bad) expect(() => parseRedisUrl(raw), raw).toThrow(RedisUrlError);
  expect(() => configFromEnv({ REDIS_URL: "redis+cluster://h" })).toThrow(ConfigError);
  expect(() => configFromEnv({ REDIS_URL: "redis+cluster://h" })).toThrow(/^REDIS_URL must list/);
  expect(configFromEnv({ REDIS_URL: "redis+cluster://h:1,h:2" }).redisUrl).toBe(
    "redis+cluster://h:1,h:2",
  );
});

test("logs never show the password", () => {
  expect(redact("redis+cluster://svc:s3cret@h:1,h:2")).toBe("redis+cluster://svc:***@h:1,h:2");
  expect(redact("redis://:s3cret@h:1")).toBe("redis://:***@h:1");
  expect(redact("redis://h:1")).toBe("redis://h:1");
});

test("one setting picks the client: Redis for one server, Cluster (with the service's scripts) for a cluster", () => {
  const single = createRedisClient("redis://127.0.0.1:1");
  const cluster = createRedisClient("redis+cluster://127.0.0.1:1,127.0.0.1:2");
  for (const client of [single, cluster]) client.on("error", () => {});
  try {
    expect(single).toBeInstanceOf(Redis);
    expect(cluster).toBeInstanceOf(Cluster);
    expect(typeof cluster.offer).toBe("function");
    expect(defaultClusterOptions.redisOptions?.maxRetriesPerRequest).toBe(1);
  } finally {
    single.disconnect();
    cluster.disconnect();
  }
});
