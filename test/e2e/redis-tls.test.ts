import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import { connectRedis } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { readRedisTls } from "../../server/redis/redis-tls.js";
import { watchSwitches } from "../../server/redis/switch-watch.js";
import { TlsConnector } from "../../server/redis/tls-connector.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { grpcClients, putSession, spawnService, tempDir, uniqueId } from "../support/harness.js";
import { startSentinelSet } from "../support/redis-sentinel.js";
import { type RedisTlsTestFiles, redisTlsTestFiles, startTlsRedis } from "../support/redis-tls.js";
import { offeredRecords, offerOne } from "../support/suggest.js";
import { hasOpenssl } from "../support/tls-cert.js";

/*
 * TLS to Redis with a team's own CA (REDIS_TLS_*), on real processes: redis-servers that
 * speak TLS alone, with certificates made by openssl, and the service started as
 * `npm start` starts it. A certificate that is not verified, or a client certificate
 * Redis asks for and does not get, stops the start with one line saying what to set.
 */

const dir = tempDir("redis-tls");
let files: RedisTlsTestFiles;
/** Redis's certificate names 127.0.0.1; no client certificate asked for. */
let plain: RedisServerProcess;
/** The same certificate; a client certificate the CA signed is required. */
let mutual: RedisServerProcess;
/** A certificate for redis.internal only, reached at 127.0.0.1. */
let named: RedisServerProcess;

beforeAll(async () => {
  files = await redisTlsTestFiles(dir.dir);
  [plain, mutual, named] = await Promise.all([
    startTlsRedis(join(dir.dir, "plain"), files.server, files.ca, false),
    startTlsRedis(join(dir.dir, "mutual"), files.server, files.ca, true),
    startTlsRedis(join(dir.dir, "named"), files.named, files.ca, false),
  ]);
});

afterAll(async () => {
  await Promise.all([plain, mutual, named].map((redis) => redis?.stop()));
  dir.remove();
});

/**
 * Starts the service on `redis` with `env`, and shows it serves: health SERVING, an
 * offer recorded (its `offered` record read from Redis over TLS, as the service wrote
 * it) and read back over gRPC.
 */
async function servesOffers(redis: RedisServerProcess, env: Record<string, string>) {
  const service = await spawnService(redis.url, env);
  const tls = readRedisTls(
    {
      caFile: env.REDIS_TLS_CA_FILE,
      certFile: env.REDIS_TLS_CERT_FILE,
      keyFile: env.REDIS_TLS_KEY_FILE,
      servername: env.REDIS_TLS_SERVERNAME,
    },
    redis.url,
  );
  const reader = createRedisClient(redis.url, undefined, { tls });
  try {
    const clients = grpcClients(service.url);
    expect((await createClient(Health, clients.transport).check({})).status).toBe(Status.SERVING);
    const sessionId = uniqueId("tls");
    await putSession(clients, { sessionId });
    const offered = await offerOne(clients, sessionId, "Rotate the Redis certificates");
    const list = await clients.suggestions.listSuggestions({ sessionId });
    expect(list.open.map((s) => [s.id, s.title])).toEqual([
      [offered.id, "Rotate the Redis certificates"],
    ]);
    const records = await offeredRecords(reader, sessionId);
    expect(records.map((r) => r.title)).toEqual(["Rotate the Redis certificates"]);
  } finally {
    reader.disconnect();
    await service.kill("SIGTERM");
  }
}

/** Starts the service on `url` with `env`, which must stop the start: its last line. */
async function refusedStart(url: string, env: Record<string, string>): Promise<string> {
  const outcome = await spawnService(url, env).then(
    async (service) => {
      await service.kill();
      return undefined;
    },
    (err: Error) => err.message,
  );
  if (outcome === undefined) throw new Error("the service started");
  expect(outcome).toMatch(/^service exited \(1\):/);
  return outcome.trim().split("\n").at(-1) as string;
}

/** The errors no listener took (`uncaughtException`) while `work` ran, and 500 ms after. */
async function uncaughtDuring(work: () => Promise<void>): Promise<unknown[]> {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on("uncaughtException", onUncaught);
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 500));
  } finally {
    process.off("uncaughtException", onUncaught);
  }
  return uncaught;
}

const where = (redis: RedisServerProcess) => `127.0.0.1:${redis.port}`;

describe.skipIf(!hasOpenssl)("TLS to Redis (rediss://, REDIS_TLS_*)", () => {
  test("with REDIS_TLS_CA_FILE, the team's CA: SERVING, an offer recorded and read back", async () => {
    await servesOffers(plain, { REDIS_TLS_CA_FILE: files.ca.cert });
  });

  test("without REDIS_TLS_CA_FILE, Node's own CAs do not verify Redis's certificate: the start stops saying so", async () => {
    expect(await refusedStart(plain.url, {})).toBe(
      `suggest-task: Redis at ${where(plain)} presented a certificate that was not verified with Node's own CAs (REDIS_TLS_CA_FILE is unset) (self-signed certificate in certificate chain); set REDIS_TLS_CA_FILE to the PEM bundle of the CA that signs Redis's certificate`,
    );
  });

  test("a REDIS_TLS_CA_FILE that did not sign Redis's certificate: the start stops naming it", async () => {
    expect(await refusedStart(plain.url, { REDIS_TLS_CA_FILE: files.otherCa.cert })).toBe(
      `suggest-task: Redis at ${where(plain)} presented a certificate that was not verified with REDIS_TLS_CA_FILE (self-signed certificate in certificate chain); set REDIS_TLS_CA_FILE to the PEM bundle of the CA that signs Redis's certificate`,
    );
  });

  test("a Redis that asks for a client certificate: served with REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE", async () => {
    await servesOffers(mutual, {
      REDIS_TLS_CA_FILE: files.ca.cert,
      REDIS_TLS_CERT_FILE: files.client.cert,
      REDIS_TLS_KEY_FILE: files.client.key,
    });
  });

  test("a Redis that asks for a client certificate: the start stops without one, and with one Redis does not trust", async () => {
    expect(await refusedStart(mutual.url, { REDIS_TLS_CA_FILE: files.ca.cert })).toBe(
      `suggest-task: Redis at ${where(mutual)} asks for a client certificate (tlsv13 alert certificate required); set REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE to one signed by a CA that Redis trusts`,
    );
    const stranger = {
      REDIS_TLS_CA_FILE: files.ca.cert,
      REDIS_TLS_CERT_FILE: files.stranger.cert,
      REDIS_TLS_KEY_FILE: files.stranger.key,
    };
    expect(await refusedStart(mutual.url, stranger)).toBe(
      `suggest-task: Redis at ${where(mutual)} refused the client certificate of REDIS_TLS_CERT_FILE (tlsv1 alert unknown ca); use one signed by a CA that Redis trusts (its tls-ca-cert-file)`,
    );
  });

  test("a certificate for redis.internal reached at 127.0.0.1: refused without REDIS_TLS_SERVERNAME, served with it", async () => {
    expect(await refusedStart(named.url, { REDIS_TLS_CA_FILE: files.ca.cert })).toBe(
      `suggest-task: Redis at ${where(named)} presented a certificate that was not verified: it names DNS:redis.internal, not 127.0.0.1; set REDIS_TLS_SERVERNAME to a name the certificate holds`,
    );
    await servesOffers(named, {
      REDIS_TLS_CA_FILE: files.ca.cert,
      REDIS_TLS_SERVERNAME: "redis.internal",
    });
  });

  test("a bad file stops the start naming its variable", async () => {
    const missing = join(dir.dir, "missing.pem");
    expect(await refusedStart(plain.url, { REDIS_TLS_CA_FILE: missing })).toBe(
      `suggest-task: REDIS_TLS_CA_FILE ${missing} cannot be read (ENOENT: no such file or directory, open '${missing}')`,
    );
  });

  test("connections closed during handshakes the service refuses never end the process", async () => {
    // A TLS socket whose certificate was refused may emit a second error (Redis's alert)
    // once ioredis's own listener is gone: closed at every point of the handshake.
    const seen = new Set<string>();
    const uncaught = await uncaughtDuring(async () => {
      const tls = readRedisTls({ caFile: files.ca.cert }, named.url);
      for (let i = 0; i < 60; i++) {
        const client = connectRedis(named.url, { tls });
        client.on("error", (err: NodeJS.ErrnoException) => seen.add(String(err.code)));
        await new Promise((resolve) => setTimeout(resolve, i % 8));
        await client.quit().catch(() => client.disconnect());
      }
    });
    expect(seen).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
    expect(uncaught).toEqual([]);
  });

  describe("through sentinels (rediss+sentinel://)", () => {
    let set: Awaited<ReturnType<typeof startSentinelSet>>;
    beforeAll(async () => {
      set = await startSentinelSet({ replicas: 1, tls: { identity: files.server, ca: files.ca } });
    });
    afterAll(async () => {
      await set?.close();
    });

    test("TLS to the sentinels and the data nodes (tls-replication yes), an offer recorded", async () => {
      expect(set.url).toMatch(/^rediss\+sentinel:\/\/127\.0\.0\.1:\d+,/);
      const primary = { ...set.nodes[0], url: set.url } as RedisServerProcess;
      await servesOffers(primary, { REDIS_TLS_CA_FILE: files.ca.cert });
      expect(await refusedStart(set.url, { REDIS_TLS_CA_FILE: files.otherCa.cert })).toMatch(
        /^suggest-task: Redis at 127\.0\.0\.1:\d+ presented a certificate that was not verified with REDIS_TLS_CA_FILE \(self-signed certificate in certificate chain\); set REDIS_TLS_CA_FILE to the PEM bundle of the CA that signs Redis's certificate$/,
      );
    });

    test("sentinels whose certificates are refused, asked again and again, never end the process", async () => {
      // A connection closed during a handshake whose certificate the service refused may
      // see a second error, Redis's alert. The watch of `+switch-master` is closed at each
      // point of its handshakes; ioredis asks the sentinels for the primary on connections
      // of its own, each opened with TlsConnector (counted here).
      const opened = vi.spyOn(TlsConnector.prototype, "connect");
      const seen: string[] = [];
      let connections = 0;
      const uncaught = await uncaughtDuring(async () => {
        const tls = readRedisTls({ caFile: files.otherCa.cert }, set.url);
        const clients = Array.from({ length: 6 }, () => {
          const client = connectRedis(set.url, { tls }) as Redis;
          client.on("error", (err: Error) => seen.push(err.message));
          return client;
        });
        for (let i = 0; i < 60; i++) {
          const stop = watchSwitches(clients[i % clients.length] as Redis, () => {});
          await new Promise((resolve) => setTimeout(resolve, i % 10));
          stop();
        }
        // Each client asks every sentinel at least twice (at most 1 s between rounds).
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        for (const client of clients) client.disconnect();
      }).finally(() => {
        connections = opened.mock.calls.length;
        opened.mockRestore();
      });
      expect(uncaught).toEqual([]);
      expect(seen.length).toBeGreaterThanOrEqual(12);
      expect(new Set(seen.map((m) => m.replace(/\d+ms/, "<n>ms")))).toEqual(
        new Set([
          "All sentinels are unreachable. Retrying from scratch after <n>ms. Last error: Connection is closed.",
        ]),
      );
      // Each watch's connection to each of the three sentinels (180), and the clients' own
      // to the sentinels, round after round: all of them opened with TlsConnector.
      expect(connections).toBeGreaterThanOrEqual(60 * 3 + 6 * 3 * 2);
    });
  });
});
