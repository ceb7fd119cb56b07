import { resolve } from "node:path";
import { ConfigError, configFromEnv } from "./config.js";
import { createRedisClient } from "./redis/redis-client.js";
import {
  RedisServerMissingError,
  type RedisServerProcess,
  startRedisServer,
} from "./redis/redis-server-process.js";
import { parseRedisUrl, redact } from "./redis/redis-url.js";
import { startSuggestServer } from "./server.js";
import { rebuildInboxes } from "./store/inbox-rebuild.js";

/**
 * The service's entry point, and the only module that reads the environment and
 * listens. With REDIS_URL unset it runs a private redis-server (AOF, appendfsync
 * always, data under DATA_DIR) and stops it on exit; a `redis+cluster://` REDIS_URL
 * runs it on a Redis Cluster.
 */
async function main(): Promise<void> {
  let config = configFromEnv(process.env);
  if (config.authTokens.length === 0 && !isLoopback(config.host)) {
    console.log(
      `suggest-task: no AUTH_TOKENS are set, so it listens on loopback only (127.0.0.1), not on ${config.host}`,
    );
    config = { ...config, host: "127.0.0.1" };
  }
  let privateRedis: RedisServerProcess | undefined;
  let redisUrl = config.redisUrl;
  if (redisUrl === undefined) {
    privateRedis = await startRedisServer({ dir: resolve(config.dataDir, "redis") });
    redisUrl = privateRedis.url;
  }
  if (process.argv[2] === "rebuild-inbox") {
    // `main.js rebuild-inbox`: recreate the workspace inbox indexes from the logs, then exit.
    const redis = createRedisClient(redisUrl);
    const report = await rebuildInboxes(redis);
    console.log(`rebuilt the inbox of ${report.announced} chat(s) from ${report.chats} log(s)`);
    await redis.quit();
    await privateRedis?.stop();
    process.exit(0);
  }
  const server = await startSuggestServer({ ...config, redisUrl });
  const parts = [
    config.authTokens.length === 0
      ? "no auth (AUTH_TOKENS unset): loopback only"
      : `bearer auth: ${config.authTokens.length} token(s)`,
    `suggest-task listening on ${server.url} (gRPC, Connect and gRPC-Web; h2c and HTTP/1.1)`,
    privateRedis
      ? `private redis-server on ${privateRedis.url}, data in ${privateRedis.dir}`
      : `${parseRedisUrl(redisUrl).kind === "cluster" ? "Redis Cluster" : "Redis"} at ${redact(redisUrl)}`,
    config.chatHostUrl ? `chat host at ${config.chatHostUrl}` : "embedded chat host",
  ];
  console.log(parts.join("; "));

  const stop = async (signal: string) => {
    console.log(`${signal}: shutting down`);
    await server.close();
    await privateRedis?.stop();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
}

/** True for addresses only this machine can reach. */
function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof RedisServerMissingError) {
    console.error(`suggest-task: ${err.message}`);
  } else {
    console.error("suggest-task failed to start:", err);
  }
  process.exit(1);
});
