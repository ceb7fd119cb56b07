import { basename, dirname, join } from "node:path";
import {
  type RedisServerOptions,
  type RedisServerProcess,
  startRedisServer,
} from "../../server/redis/redis-server-process.js";

/**
 * The one place that says which server the tests and benches start for Redis: the
 * executable named by `SUGGEST_TEST_REDIS_SERVER` (`valkey-server`, or a path to one),
 * `redis-server` by default. CI runs some passes with `valkey-server` (.ci/run), so that
 * every suite holds on both. Tests of `npm start`'s own private store keep the service's
 * choice (the first of redis-server and valkey-server on PATH).
 */
export const TEST_REDIS_SERVER = process.env.SUGGEST_TEST_REDIS_SERVER || "redis-server";

/**
 * The command line client beside it (`redis-cli`, `valkey-cli`): the server's name with
 * `-cli` for `-server`, in the same folder when a path is given.
 */
export const TEST_REDIS_CLI = cliBeside(TEST_REDIS_SERVER);

function cliBeside(server: string): string {
  const name = basename(server).replace(/-server$/, "-cli");
  return server.includes("/") ? join(dirname(server), name) : name;
}

/** Starts a server of the tests' own (`startRedisServer`) with `TEST_REDIS_SERVER`. */
export function startTestRedis(options: RedisServerOptions): Promise<RedisServerProcess> {
  return startRedisServer({ executable: TEST_REDIS_SERVER, ...options });
}
