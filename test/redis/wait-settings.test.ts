import { expect, test } from "vitest";
import { ConfigError, configFromEnv } from "../../server/config.js";

test("REDIS_WAIT_REPLICAS and REDIS_WAIT_TIMEOUT_MS: defaults, and values out of range refused naming the variable", () => {
  const defaults = configFromEnv({});
  expect(defaults.redisWaitReplicas).toBe(0);
  expect(defaults.redisWaitTimeoutMs).toBe(1_000);
  const set = configFromEnv({ REDIS_WAIT_REPLICAS: "2", REDIS_WAIT_TIMEOUT_MS: "4000" });
  expect(set.redisWaitReplicas).toBe(2);
  expect(set.redisWaitTimeoutMs).toBe(4_000);
  // A WAIT must answer before the client gives up on a Redis command (5 s).
  expect(() => configFromEnv({ REDIS_WAIT_TIMEOUT_MS: "5000" })).toThrow(ConfigError);
  expect(() => configFromEnv({ REDIS_WAIT_TIMEOUT_MS: "5000" })).toThrow(
    'REDIS_WAIT_TIMEOUT_MS must be a whole number from 1 to 4000 (got "5000")',
  );
  expect(() => configFromEnv({ REDIS_WAIT_REPLICAS: "-1" })).toThrow(
    'REDIS_WAIT_REPLICAS must be a whole number from 0 to 16 (got "-1")',
  );
});
