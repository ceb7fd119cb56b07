import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readRedisTls } from "../../server/redis/redis-tls.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { grpcClients, putSession, spawnService, tempDir, uniqueId } from "../support/harness.js";
import { type LocalRedisCluster, startRedisCluster } from "../support/redis-cluster.js";
import { type RedisTlsTestFiles, redisTlsTestFiles } from "../support/redis-tls.js";
import { offeredRecords, offerOne } from "../support/suggest.js";
import { hasOpenssl } from "../support/tls-cert.js";

/*
 * `rediss+cluster://`: TLS to every node of a Redis Cluster (3 primaries, TLS alone,
 * `tls-cluster yes`), with the team's CA. The nodes' certificate names redis.internal
 * only, and the cluster announces its nodes by IP: REDIS_TLS_SERVERNAME is the name
 * verified on every node's connection, the seeds' and the announced ones' alike.
 */

const dir = tempDir("cluster-tls");
let files: RedisTlsTestFiles;
let cluster: LocalRedisCluster;

beforeAll(async () => {
  files = await redisTlsTestFiles(dir.dir);
  cluster = await startRedisCluster({ tls: { identity: files.named, ca: files.ca } });
});

afterAll(async () => {
  await cluster?.stop();
  dir.remove();
});

describe.skipIf(!hasOpenssl)("TLS to a Redis Cluster (rediss+cluster://)", () => {
  test("without REDIS_TLS_SERVERNAME, a node's certificate does not name its address: the start stops saying so", async () => {
    expect(cluster.url).toMatch(/^rediss\+cluster:\/\/127\.0\.0\.1:\d+,/);
    const outcome = await spawnService(cluster.url, { REDIS_TLS_CA_FILE: files.ca.cert }).then(
      async (service) => {
        await service.kill();
        return "the service started";
      },
      (err: Error) => err.message.trim().split("\n").at(-1),
    );
    expect(outcome).toMatch(
      /^suggest-task: Redis at 127\.0\.0\.1:\d+ presented a certificate that was not verified: it names DNS:redis\.internal, not 127\.0\.0\.1; set REDIS_TLS_SERVERNAME to a name the certificate holds$/,
    );
  });

  test("with REDIS_TLS_CA_FILE and REDIS_TLS_SERVERNAME: an offer recorded on the cluster and read back", async () => {
    const env = { REDIS_TLS_CA_FILE: files.ca.cert, REDIS_TLS_SERVERNAME: "redis.internal" };
    const service = await spawnService(cluster.url, env);
    const tls = readRedisTls(
      { caFile: env.REDIS_TLS_CA_FILE, servername: env.REDIS_TLS_SERVERNAME },
      cluster.url,
    );
    const reader = createRedisClient(cluster.url, undefined, { tls });
    try {
      const clients = grpcClients(service.url);
      const sessionId = uniqueId("cluster-tls");
      await putSession(clients, { sessionId });
      const offered = await offerOne(clients, sessionId, "Spread the certificates");
      const list = await clients.suggestions.listSuggestions({ sessionId });
      expect(list.open.map((s) => [s.id, s.title])).toEqual([
        [offered.id, "Spread the certificates"],
      ]);
      // Read from the primary that owns the chat's slot, over TLS as the service wrote it.
      const records = await offeredRecords(reader, sessionId);
      expect(records.map((r) => r.title)).toEqual(["Spread the certificates"]);
    } finally {
      reader.disconnect();
      await service.kill("SIGTERM");
    }
  });
});
