import { Redis, type RedisOptions } from "ioredis";
import { defineScripts } from "./scripts.js";

/**
 * Client settings chosen so that a call never hangs on a Redis that is down: a command
 * fails after one reconnection attempt (and the handler answers UNAVAILABLE) instead of
 * waiting in the offline queue. Commands that were sent but not answered are re-sent
 * after a reconnect (ioredis's default); every script is idempotent for that reason.
 */
export const defaultRedisOptions: Readonly<RedisOptions> = Object.freeze({
  maxRetriesPerRequest: 1,
  connectTimeout: 2_000,
  commandTimeout: 5_000,
  enableAutoPipelining: true,
});

/** A Redis client with the service's scripts defined on it. */
export function createRedisClient(url: string, options: RedisOptions = {}): Redis {
  const client = new Redis(url, { ...defaultRedisOptions, ...options });
  defineScripts(client);
  return client;
}
