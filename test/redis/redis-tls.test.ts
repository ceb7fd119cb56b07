import { generateKeyPairSync } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ConfigError, configFromEnv } from "../../server/config.js";
import {
  clusterTlsOptions,
  type RedisTlsFiles,
  readRedisTls,
  sentinelTlsOptions,
} from "../../server/redis/redis-tls.js";
import { SentinelTlsConnector } from "../../server/redis/tls-connector.js";
import { tlsRefusal } from "../../server/redis/tls-refusal.js";
import { tempDir } from "../support/harness.js";
import { type RedisTlsTestFiles, redisTlsTestFiles } from "../support/redis-tls.js";
import { hasOpenssl } from "../support/tls-cert.js";

/*
 * The REDIS_TLS_* files are read and checked once, at start-up: each bad one stops the
 * start with a message naming its variable (server/redis/redis-tls.ts), and a setting
 * with a REDIS_URL that is not TLS is refused rather than ignored.
 */

const URL = "rediss://redis.example:6380";
const dir = tempDir("redis-tls-files");
let files: RedisTlsTestFiles;
const path = (name: string) => join(dir.dir, name);

beforeAll(async () => {
  files = await redisTlsTestFiles(dir.dir);
  writeFileSync(path("not-pem.txt"), "a certificate, honestly\n");
  writeFileSync(
    path("broken.pem"),
    "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
  );
  const { privateKey } = generateKeyPairSync("ec", {
    namedCurve: "P-256",
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: {
      ...{ type: "pkcs8", format: "pem" },
      ...{ cipher: "aes-256-cbc", passphrase: "secret" },
    },
  });
  writeFileSync(path("encrypted-key.pem"), privateKey);
});
afterAll(() => dir.remove());

/** The message `readRedisTls` throws for `tls` with a `rediss://` REDIS_URL. */
function refusal(tls: RedisTlsFiles): string {
  return refusalWith(tls, URL);
}

/** The message `readRedisTls` throws for `tls` with REDIS_URL `url` (undefined: unset). */
function refusalWith(tls: RedisTlsFiles, url: string | undefined): string {
  try {
    readRedisTls(tls, url);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("accepted");
}

describe.skipIf(!hasOpenssl)("REDIS_TLS_* files", () => {
  test("none set: no TLS options of the service's own (Node's defaults for rediss://)", () => {
    expect(readRedisTls({}, URL)).toBeUndefined();
    expect(readRedisTls({}, "redis://127.0.0.1:6379")).toBeUndefined();
    expect(readRedisTls({}, undefined)).toBeUndefined();
  });

  test("good files: the PEM text of each, and the servername, for every connection", () => {
    const tls = readRedisTls(
      {
        caFile: files.ca.cert,
        certFile: files.client.cert,
        keyFile: files.client.key,
        servername: "redis.internal",
      },
      "rediss+cluster://10.0.0.1:6380,10.0.0.2:6380",
    );
    expect(tls).toEqual({
      ca: readFileSync(files.ca.cert, "utf8"),
      cert: readFileSync(files.client.cert, "utf8"),
      key: readFileSync(files.client.key, "utf8"),
      servername: "redis.internal",
    });
    // A cluster's nodes and Sentinel's sentinels and data nodes take the same options.
    expect(clusterTlsOptions(tls).redisOptions.tls).toEqual(tls);
    expect(sentinelTlsOptions(tls)).toEqual({
      tls,
      sentinelTLS: tls,
      enableTLSForSentinelMode: true,
      Connector: SentinelTlsConnector,
    });
  });

  test("REDIS_TLS_CA_FILE: missing, unreadable, not PEM, a PEM block that does not parse", () => {
    const missing = path("missing.pem");
    expect(refusal({ caFile: missing })).toBe(
      `REDIS_TLS_CA_FILE ${missing} cannot be read (ENOENT: no such file or directory, open '${missing}')`,
    );
    expect(refusal({ caFile: dir.dir })).toBe(
      `REDIS_TLS_CA_FILE ${dir.dir} cannot be read (EISDIR: illegal operation on a directory, read)`,
    );
    expect(refusal({ caFile: path("not-pem.txt") })).toBe(
      `REDIS_TLS_CA_FILE ${path("not-pem.txt")} holds no PEM certificate`,
    );
    expect(refusal({ caFile: files.ca.key })).toBe(
      `REDIS_TLS_CA_FILE ${files.ca.key} holds no PEM certificate`,
    );
    expect(refusal({ caFile: path("broken.pem") })).toMatch(
      new RegExp(
        `^REDIS_TLS_CA_FILE ${path("broken.pem")} holds a PEM certificate that does not parse \\(.+\\)$`,
      ),
    );
  });

  test("REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE: both or neither, each a PEM of its kind, the key the certificate's", () => {
    const together = "REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE must be set together";
    expect(refusal({ certFile: files.client.cert })).toBe(together);
    expect(refusal({ keyFile: files.client.key })).toBe(together);
    expect(refusal({ certFile: path("not-pem.txt"), keyFile: files.client.key })).toBe(
      `REDIS_TLS_CERT_FILE ${path("not-pem.txt")} holds no PEM certificate`,
    );
    expect(refusal({ certFile: files.client.cert, keyFile: files.client.cert })).toMatch(
      new RegExp(
        `^REDIS_TLS_KEY_FILE ${files.client.cert} holds no unencrypted PEM private key \\(.+\\)$`,
      ),
    );
    expect(refusal({ certFile: files.client.cert, keyFile: path("encrypted-key.pem") })).toMatch(
      new RegExp(
        `^REDIS_TLS_KEY_FILE ${path("encrypted-key.pem")} holds no unencrypted PEM private key \\(.+\\)$`,
      ),
    );
    expect(refusal({ certFile: files.client.cert, keyFile: files.stranger.key })).toBe(
      `REDIS_TLS_KEY_FILE ${files.stranger.key} is not the private key of the certificate in REDIS_TLS_CERT_FILE ${files.client.cert}`,
    );
  });

  test("REDIS_TLS_SERVERNAME: a DNS name, never an address", () => {
    for (const name of ["127.0.0.1", "::1", "redis internal", "-redis", "1.2.3"]) {
      expect(refusal({ servername: name })).toBe(
        `REDIS_TLS_SERVERNAME must be a DNS name, as redis.internal (got "${name}")`,
      );
    }
    expect(readRedisTls({ servername: "redis-0.redis.svc" }, URL)).toEqual({
      servername: "redis-0.redis.svc",
    });
  });

  test("with a REDIS_URL that is not TLS, or the private Redis: refused, not ignored", () => {
    const tail =
      "TLS to Redis needs a rediss://, rediss+cluster:// or rediss+sentinel:// REDIS_URL";
    expect(refusalWith({ caFile: files.ca.cert }, "redis://:pw@10.0.0.1:6379")).toBe(
      `REDIS_TLS_CA_FILE is set, but REDIS_URL is "redis://:***@10.0.0.1:6379": ${tail}`,
    );
    expect(refusalWith({ servername: "redis.internal" }, "redis+cluster://10.0.0.1:6379")).toBe(
      `REDIS_TLS_SERVERNAME is set, but REDIS_URL is "redis+cluster://10.0.0.1:6379": ${tail}`,
    );
    expect(refusalWith({ certFile: files.client.cert }, "unix:///run/redis.sock")).toBe(
      `REDIS_TLS_CERT_FILE is set, but REDIS_URL is "unix:///run/redis.sock": ${tail}`,
    );
    expect(refusalWith({ keyFile: files.client.key }, undefined)).toBe(
      `REDIS_TLS_KEY_FILE is set, but REDIS_URL is unset (the private Redis): ${tail}`,
    );
  });

  test("the settings: a bad file is a ConfigError naming the variable; good ones reach the config", () => {
    const env = { REDIS_URL: URL, REDIS_TLS_CA_FILE: path("not-pem.txt") };
    expect(() => configFromEnv(env)).toThrow(
      new ConfigError(`REDIS_TLS_CA_FILE ${path("not-pem.txt")} holds no PEM certificate`),
    );
    expect(configFromEnv({ ...env, REDIS_TLS_CA_FILE: files.ca.cert }).redisTls).toEqual({
      ca: readFileSync(files.ca.cert, "utf8"),
    });
    expect(configFromEnv({ REDIS_URL: URL }).redisTls).toBeUndefined();
  });
});

describe("a failed handshake, said as what to set", () => {
  const where = "10.0.0.7:6380";
  const fail = (code: string, message: string, more: object = {}) =>
    Object.assign(new Error(message), { code, ...more });

  test("a certificate outside its dates", () => {
    expect(tlsRefusal(fail("CERT_HAS_EXPIRED", "certificate has expired"), where, {})).toBe(
      "Redis at 10.0.0.7:6380 presented a certificate that was not verified (certificate has expired); renew Redis's certificate",
    );
  });

  test("a certificate that does not name REDIS_TLS_SERVERNAME", () => {
    const err = fail("ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match", {
      host: "redis.other",
      cert: { subjectaltname: "DNS:redis.internal" },
    });
    expect(tlsRefusal(err, where, { servername: "redis.other" })).toBe(
      "Redis at 10.0.0.7:6380 presented a certificate that was not verified: it names DNS:redis.internal, not redis.other; REDIS_TLS_SERVERNAME must be a name the certificate holds",
    );
  });

  test("errors that are no TLS refusal are left to the outage's handling", () => {
    expect(tlsRefusal(fail("ECONNREFUSED", "connect ECONNREFUSED"), where, {})).toBeUndefined();
    expect(tlsRefusal(fail("ECONNRESET", "read ECONNRESET"), where, {})).toBeUndefined();
    expect(tlsRefusal(new Error("Connection is closed."), where, {})).toBeUndefined();
  });
});
