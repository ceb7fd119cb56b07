import { afterAll, beforeAll, expect, test } from "vitest";
import { connectRedis } from "../../server/redis/redis-client.js";
import { type RedisServerProcess, socketPathIn } from "../../server/redis/redis-server-process.js";
import { grpcClients, putSession, startTestServer, tempDir, uniqueId } from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";
import { offerOne } from "../support/suggest.js";

/*
 * A Redis on the same machine can be reached over its Unix socket (`unix:///<path>`), as
 * `npm start` reaches its private redis-server: a redis-server of this file's own,
 * listening on a socket in its folder as well as on TCP.
 */

const folder = tempDir("unix-socket");
let redis: RedisServerProcess;
beforeAll(async () => {
  redis = await startTestRedis({ dir: folder.dir, unixSocket: socketPathIn(folder.dir) });
});
afterAll(async () => {
  await redis?.stop();
  folder.remove();
});

test("the socket is in the server's folder; a path too long for one gives none", () => {
  expect(redis.socketUrl).toBe(`unix://${folder.dir}/redis.sock`);
  expect(socketPathIn(`/${"d".repeat(120)}`)).toBeUndefined();
});

test("the service runs on the socket: its connections are the socket's, and a call is recorded", async () => {
  const url = redis.socketUrl as string;
  const server = await startTestServer(url);
  const tcp = connectRedis(redis.url);
  try {
    const clients = grpcClients(server.url);
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    const { id } = await offerOne(clients, sessionId, "Over the socket");
    const { suggestion } = await clients.suggestions.getSuggestion({ sessionId, suggestionId: id });
    expect(suggestion?.title).toBe("Over the socket");
    // A watch, so that the subscriber connection is open too.
    const watching = new AbortController();
    const stream = clients.suggestions.watchSuggestions({ sessionId }, { signal: watching.signal });
    const first = await stream[Symbol.asyncIterator]().next();
    expect(first.value?.open.map((x: { title: string }) => x.title)).toEqual(["Over the socket"]);
    // Every connection but this test's own came through the socket.
    const list = (await tcp.client("LIST")) as string;
    watching.abort();
    const others = list
      .trim()
      .split("\n")
      .filter((line) => !line.includes("cmd=client|list"));
    // The service's commands and its subscriber.
    expect(others.length).toBeGreaterThanOrEqual(2);
    expect(others.some((line) => line.includes("flags=P"))).toBe(true);
    for (const line of others) expect(line).toContain(`addr=${folder.dir}/redis.sock:0`);
  } finally {
    tcp.disconnect();
    await server.close();
  }
});
