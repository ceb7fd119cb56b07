import type { RedisClient } from "./redis-client.js";

/** Where outage lines go: a pino-like logger's warn and info. */
export interface OutageLogger {
  warn(message: string): void;
  info(message: string): void;
}

/**
 * Says when Redis cannot be reached: at the first failed connection (at start, too),
 * again every `repeatMs` while it lasts, and once when it answers again. ioredis keeps
 * reconnecting meanwhile, calls answer UNAVAILABLE and health says NOT_SERVING.
 * `where` names the Redis (its URL without the password). Answers a function that stops it.
 */
export function logRedisOutages(
  redis: RedisClient,
  where: string,
  logger: OutageLogger,
  repeatMs = 5_000,
): () => void {
  let downSince: number | undefined;
  let lastSaid = 0;
  const onError = (err: Error) => {
    const now = Date.now();
    if (downSince !== undefined && now - lastSaid < repeatMs) return;
    downSince ??= now;
    lastSaid = now;
    const forMs = now - downSince;
    const lasting = forMs > 0 ? ` for ${Math.round(forMs / 1000)} s` : "";
    logger.warn(`Redis at ${where} is unreachable${lasting} (${err.message}); retrying`);
  };
  const onReady = () => {
    if (downSince === undefined) return;
    downSince = undefined;
    logger.info(`Redis at ${where} is reachable again`);
  };
  redis.on("error", onError);
  redis.on("ready", onReady);
  return () => {
    redis.off("error", onError);
    redis.off("ready", onReady);
  };
}
