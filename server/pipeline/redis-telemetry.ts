import type { Redis } from "ioredis";
import { AnswerWatch } from "../redis/answer-watch.js";
import { watchFailoverChecks } from "../redis/failover-checks.js";
import { logRedisOutages } from "../redis/outage-log.js";
import { type RedisAccess, type RedisClient, subscriberConnection } from "../redis/redis-client.js";
import { isSentinelClient } from "../redis/redis-sentinel.js";
import { redact } from "../redis/redis-url.js";
import { watchEvictionPolicy } from "../redis/store-checks.js";
import { type StoreRefusal, storeCondition } from "../redis/store-condition.js";
import type { WriteConfirmation } from "../redis/write-confirm.js";
import { PubSub } from "../store/pubsub.js";
import { createRedisClient } from "../store/scripts.js";
import type { Telemetry } from "./telemetry.js";

/*
 * The service's Redis connections as telemetry sees them: every error counted in
 * `suggest_redis_errors_total`, what needs an operator logged. Wired by server/server.ts.
 */

/**
 * The instance's subscriber (store/pubsub.ts): a standalone Redis's followed by the answer
 * watch, its errors and failed re-subscriptions counted and logged.
 */
export function createPubSub(
  redis: RedisClient,
  answers: AnswerWatch | undefined,
  telemetry: Telemetry,
): PubSub {
  return new PubSub(
    () => {
      const subscriber = subscriberConnection(redis);
      if (!subscriber.isCluster) answers?.follow(subscriber as Redis);
      return subscriber;
    },
    (err, what) => {
      telemetry.redisErrors.inc();
      // A lost connection is the command client's outage too, logged once there.
      if (what === "subscriber") telemetry.logger.debug({ err }, "Redis subscriber error");
      else telemetry.logger.warn({ err }, `Redis ${what} failed; tried again`);
    },
  );
}

/**
 * The answer watch of a standalone Redis (redis/answer-watch.ts), told to telemetry: its
 * probe's errors counted as the client's, each connection it makes again logged.
 */
export function watchAnswers(redis: Redis, telemetry: Telemetry): AnswerWatch {
  const answers = new AnswerWatch(redis);
  answers.on("probeError", () => telemetry.redisErrors.inc());
  // The turns themselves are logged as the store's problem `unanswered` (watchStore).
  answers.on("recycled", (why) =>
    telemetry.logger.info(`${why}: a connection to it is made again`),
  );
  return answers;
}

/**
 * The store's condition told to telemetry and logs: each refused write counted by kind,
 * each problem that makes the service not ready (an evicting policy found on a
 * reconnection, a disk that refuses writes, and, through Sentinel, a promoted primary
 * short of `waitReplicas` replicas) logged when it comes and when it goes.
 */
export function watchStore(
  redis: RedisClient,
  waitReplicas: number,
  telemetry: Telemetry,
): () => void {
  const condition = storeCondition(redis);
  const stopEvictionChecks = watchEvictionPolicy(redis);
  const stopFailoverChecks =
    !redis.isCluster && isSentinelClient(redis as Redis)
      ? watchFailoverChecks(redis as Redis, waitReplicas)
      : () => {};
  const onRefused = (refusal: StoreRefusal) => telemetry.storeRefusals.inc({ kind: refusal.kind });
  let logged = new Map<string, string>();
  const onChange = () => {
    for (const [name, description] of condition.problems) {
      if (logged.get(name) !== description) telemetry.logger.error({ problem: name }, description);
    }
    for (const name of logged.keys()) {
      if (!condition.problems.has(name)) telemetry.logger.info({ problem: name }, "resolved");
    }
    logged = new Map(condition.problems);
  };
  condition.on("refused", onRefused);
  condition.on("change", onChange);
  return () => {
    stopEvictionChecks();
    stopFailoverChecks();
    condition.off("refused", onRefused);
    condition.off("change", onChange);
    condition.close();
  };
}

/** The Redis client of `redisParts` and the stops of what watches it. */
export interface RedisParts {
  readonly redis: RedisClient;
  /** Stops logging the client's outages (redis/outage-log.ts). */
  readonly stopOutageLog: () => void;
  /** Whether a standalone Redis answers (redis/answer-watch.ts); none for a Cluster. */
  readonly answers: AnswerWatch | undefined;
  /** Stops the eviction policy's checks and the disk's (`watchStore`). */
  readonly stopStoreWatch: () => void;
}

/**
 * The Redis client of `url` (over TLS with `tls`: REDIS_TLS_*), its writes confirmed as
 * `confirmation` says, and what watches it: every error counted (none ends the process:
 * connection errors surface on the calls that need Redis, as UNAVAILABLE), its outages
 * logged under the URL without its password, whether a standalone Redis answers, and the
 * store's condition (eviction policy, disk).
 */
export function redisParts(
  url: string,
  access: RedisAccess,
  confirmation: WriteConfirmation,
  telemetry: Telemetry,
): RedisParts {
  const redis = createRedisClient(url, confirmation, access);
  redis.on("error", () => {
    telemetry.redisErrors.inc();
  });
  return {
    redis,
    stopOutageLog: logRedisOutages(redis, redact(url), telemetry.logger),
    answers: redis.isCluster ? undefined : watchAnswers(redis as Redis, telemetry),
    stopStoreWatch: watchStore(redis, confirmation.replicas, telemetry),
  };
}
