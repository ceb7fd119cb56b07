import { expect, test } from "vitest";
import { ConfigError, configFromEnv, defaultConfig } from "../../server/config.js";
import { requestDeadlineMs } from "../../server/transport/request-deadline.js";

test("the client timeouts and the connection cap are settings with frozen defaults", () => {
  expect(Object.isFrozen(defaultConfig)).toBe(true);
  expect(configFromEnv({})).toMatchObject({
    firstBytesTimeoutMs: 10_000,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    idleSessionTimeoutMs: 120_000,
    maxConnections: 10_000,
    startLockTtlMs: 1_500,
  });
  expect(
    configFromEnv({
      FIRST_BYTES_TIMEOUT_MS: "100",
      HEADERS_TIMEOUT_MS: "200",
      REQUEST_TIMEOUT_MS: "300",
      IDLE_SESSION_TIMEOUT_MS: "400",
      MAX_CONNECTIONS: "5",
    }),
  ).toMatchObject({
    firstBytesTimeoutMs: 100,
    headersTimeoutMs: 200,
    requestTimeoutMs: 300,
    idleSessionTimeoutMs: 400,
    maxConnections: 5,
  });
  expect(() => configFromEnv({ IDLE_SESSION_TIMEOUT_MS: "soon" })).toThrow(
    new ConfigError(
      'IDLE_SESSION_TIMEOUT_MS must be a whole number from 1 to 3600000 (got "soon")',
    ),
  );
  expect(() => configFromEnv({ MAX_CONNECTIONS: "0" })).toThrow(/^MAX_CONNECTIONS must be/);
});

test("the default connection cap leaves room under the open-file limit; a set one is kept", () => {
  expect(configFromEnv({}, 1024).maxConnections).toBe(768);
  expect(configFromEnv({}, 200).maxConnections).toBe(64);
  expect(configFromEnv({}, 1_048_576).maxConnections).toBe(10_000);
  expect(configFromEnv({ MAX_CONNECTIONS: "2000" }, 1024).maxConnections).toBe(2_000);
});

test("a request's body may take the request timeout, or the call's deadline when shorter", () => {
  expect(requestDeadlineMs({}, 30_000)).toBe(30_000);
  expect(requestDeadlineMs({ "grpc-timeout": "1S" }, 30_000)).toBe(1_000);
  expect(requestDeadlineMs({ "grpc-timeout": "5M" }, 30_000)).toBe(30_000);
  expect(requestDeadlineMs({ "connect-timeout-ms": "250" }, 30_000)).toBe(250);
  // A deadline that does not parse is the protocol handler's to refuse.
  expect(requestDeadlineMs({ "grpc-timeout": "soon" }, 30_000)).toBe(30_000);
});
