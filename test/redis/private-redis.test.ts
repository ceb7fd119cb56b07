import { statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { expect, test } from "vitest";
import { socketPathIn } from "../../server/redis/redis-server-process.js";
import { redisClient, tempDir } from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";

test("npm start's private Redis listens on its owner's socket alone, no TCP port", async () => {
  const data = tempDir("private-redis-");
  const dir = join(data.dir, "redis");
  const unixSocket = socketPathIn(dir);
  expect(unixSocket).toBeDefined();
  const redis = await startTestRedis({ dir, unixSocket, socketOnly: true });
  try {
    expect(redis.url).toBe(redis.socketUrl);
    // The socket is its owner's only: no other local user may connect to it.
    expect((statSync(unixSocket as string).mode & 0o777).toString(8)).toBe("700");
    const client = redisClient(redis.url);
    expect(await client.config("GET", "port")).toEqual(["port", "0"]);
    await client.quit();
    // Nothing answers on the port it would have had.
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(redis.port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve("connected");
      });
      socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
    });
    expect(refused).toBe("ECONNREFUSED");
  } finally {
    await redis.stop();
    data.remove();
  }
});
