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

test("redis+sentinel:// names the primary of a master name by its sentinels, with the data nodes' credentials", () => {
  expect(
    parseRedisUrl("redis+sentinel://10.0.0.1:26379, sentinel-2.internal:26380,[::1]:26381/cache"),
  ).toEqual({
    kind: "sentinel",
    sentinels: [
      { host: "10.0.0.1", port: 26379 },
      { host: "sentinel-2.internal", port: 26380 },
      { host: "::1", port: 26381 },
    ],
    name: "cache",
    username: undefined,
    password: undefined,
    tls: false,
  });
  expect(parseRedisUrl("rediss+sentinel://app:p%40ss@s1:26379/my%20master")).toEqual({
    kind: "sentinel",
    sentinels: [{ host: "s1", port: 26379 }],
    name: "my master",
    username: "app",
    password: "p@ss",
    tls: true,
  });
  expect(parseRedisUrl("redis+sentinel://:secret@s1:26379/m")).toMatchObject({
    username: undefined,
    password: "secret",
  });
  expect(redact("redis+sentinel://app:s3cret@s1:26379/m")).toBe(
    "redis+sentinel://app:***@s1:26379/m",
  );
  expect(configFromEnv({ REDIS_URL: "redis+sentinel://s1:26379/m" }).redisUrl).toBe(
    "redis+sentinel://s1:26379/m",
  );
});

test("a malformed sentinel URL is refused naming what is missing, never showing the password", () => {
  const cases: [string, string][] = [
    [
      "redis+sentinel://s1:26379",
      'must name the master after the sentinels, as redis+sentinel://host:26379/mymaster (got "redis+sentinel://s1:26379")',
    ],
    [
      "rediss+sentinel://u:pw@s1:26379/",
      'must name the master after the sentinels, as rediss+sentinel://host:26379/mymaster (got "rediss+sentinel://u:***@s1:26379/")',
    ],
    [
      "redis+sentinel://s1:26379/m/0",
      'must name the master after the sentinels, as redis+sentinel://host:26379/mymaster (got "redis+sentinel://s1:26379/m/0")',
    ],
    [
      "redis+sentinel://s1:26379/m?db=1",
      'must name the master after the sentinels, as redis+sentinel://host:26379/mymaster (got "redis+sentinel://s1:26379/m?db=1")',
    ],
    [
      "redis+sentinel://:pw@s1/m",
      'must list sentinels as host:port separated by commas (got "s1" in "redis+sentinel://:***@s1/m")',
    ],
    [
      "redis+sentinel://s1:26379,,s2:26379/m",
      'must list sentinels as host:port separated by commas (got "" in "redis+sentinel://s1:26379,,s2:26379/m")',
    ],
    [
      "redis+sentinel:///m",
      'must list sentinels as host:port separated by commas (got "" in "redis+sentinel:///m")',
    ],
    [
      "redis+sentinel://s1:0/m",
      'must list sentinels as host:port separated by commas (got "s1:0" in "redis+sentinel://s1:0/m")',
    ],
    [
      "redis+sentinel://u:%zz@s1:26379/m",
      'must percent-encode its user, password and master name (got "redis+sentinel://u:***@s1:26379/m")',
    ],
    [
      "sentinel://s1:26379/m",
      'must start with redis:, rediss:, unix:, redis+cluster:, rediss+cluster:, redis+sentinel: or rediss+sentinel: (got "sentinel://s1:26379/m")',
    ],
  ];
  for (const [raw, message] of cases) {
    expect(() => parseRedisUrl(raw), raw).toThrow(new RedisUrlError(message));
    expect(() => configFromEnv({ REDIS_URL: raw }), raw).toThrow(
      new ConfigError(`REDIS_URL ${message}`),
    );
  }
});

test("the sentinels' own credentials are settings of their own, refused beside a URL without sentinels", () => {
  const config = configFromEnv({
    REDIS_URL: "redis+sentinel://data:pw@s1:26379/m",
    REDIS_SENTINEL_USERNAME: "watcher",
    REDIS_SENTINEL_PASSWORD: "s3ntinel",
  });
  expect([config.redisSentinelUsername, config.redisSentinelPassword]).toEqual([
    "watcher",
    "s3ntinel",
  ]);
  expect(configFromEnv({ REDIS_URL: "redis+sentinel://s1:26379/m" }).redisSentinelPassword).toBe(
    undefined,
  );
  for (const [name, url] of [
    ["REDIS_SENTINEL_PASSWORD", "redis://h:1"],
    ["REDIS_SENTINEL_USERNAME", "redis+cluster://h:1"],
    ["REDIS_SENTINEL_PASSWORD", undefined],
  ] as const) {
    expect(() => configFromEnv({ REDIS_URL: url, [name]: "x" }), name).toThrow(
      new ConfigError(
        `${name} is set, but REDIS_URL names no sentinels (redis+sentinel://host:port/<master-name>)`,
      ),
    );
  }
});

test("a sentinel URL makes a Redis client of the sentinels' primary, the options from the URL and the settings", () => {
  const client = createRedisClient(
    "rediss+sentinel://data:pw@127.0.0.1:1,127.0.0.1:2/m",
    undefined,
    {
      sentinelUsername: "watcher",
      sentinelPassword: "s3ntinel",
    },
  );
  client.on("error", () => {});
  try {
    expect(client).toBeInstanceOf(Redis);
    expect(typeof (client as Redis & { offer: unknown }).offer).toBe("function");
    expect((client as Redis).options).toMatchObject({
      sentinels: [
        { host: "127.0.0.1", port: 1 },
        { host: "127.0.0.1", port: 2 },
      ],
      name: "m",
      username: "data",
      password: "pw",
      sentinelUsername: "watcher",
      sentinelPassword: "s3ntinel",
      tls: {},
      sentinelTLS: {},
      enableTLSForSentinelMode: true,
      failoverDetector: false,
      maxRetriesPerRequest: 1,
    });
  } finally {
    client.disconnect();
  }
});
