import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { connectRedis } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import type { SuggestServer } from "../../server/server.js";
import { grpcClients, startTestServer, tempDir } from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";
import { callEveryRpc, documentedAcl, refusedCommands, STORE_USER } from "../support/store-user.js";

/*
 * The service as the least-privileged user docs/redis.md gives (its `ACL SETUSER` block,
 * read from the page): every RPC works, and `ACL LOG` shows no command refused but
 * CONFIG GET, which the start-up check asks and then replaces with INFO, as where a
 * managed service refuses CONFIG. test/cluster/cluster-store-user.test.ts does the same
 * on a cluster.
 */

const PASSWORD = "store-user-password";
let folder: ReturnType<typeof tempDir>;
let redis: RedisServerProcess;
let admin: Redis;
let userUrl: string;
const servers: SuggestServer[] = [];

beforeAll(async () => {
  folder = tempDir("store-user");
  redis = await startTestRedis({ dir: folder.dir });
  admin = connectRedis(redis.url) as Redis;
  const acl = documentedAcl(PASSWORD);
  expect(acl.slice(0, 3)).toEqual(["ACL", "SETUSER", STORE_USER]);
  await admin.call(...(acl as [string, ...string[]]));
  userUrl = `redis://${STORE_USER}:${PASSWORD}@127.0.0.1:${redis.port}`;
});

afterAll(async () => {
  for (const server of servers) await server.close();
  admin.disconnect();
  await redis.stop();
  folder.remove();
});

test("the user may not run CONFIG: an evicting policy is still found (INFO) and stops the start", async () => {
  const user = connectRedis(userUrl) as Redis;
  try {
    await expect(user.config("GET", "maxmemory-policy")).rejects.toThrow(/^NOPERM/);
  } finally {
    user.disconnect();
  }
  await admin.config("SET", "maxmemory-policy", "allkeys-lru");
  try {
    await expect(startTestServer(userUrl)).rejects.toThrow(
      `Redis at 127.0.0.1:${redis.port} has maxmemory-policy allkeys-lru, which evicts keys`,
    );
  } finally {
    await admin.config("SET", "maxmemory-policy", "noeviction");
  }
});

test("every RPC works as that user; ACL LOG refuses nothing but CONFIG GET", async () => {
  await admin.call("ACL", "LOG", "RESET");
  const server = await startTestServer(userUrl);
  servers.push(server);
  await callEveryRpc(grpcClients(server.url));
  expect(await refusedCommands(admin)).toEqual(["command config|get"]);
});
