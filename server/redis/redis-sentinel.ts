import type { Socket } from "node:net";
import type { Redis, RedisOptions } from "ioredis";
import { type RedisTls, sentinelTlsOptions } from "./redis-tls.js";
import type { RedisTarget } from "./redis-url.js";

/** The sentinels' own credentials (REDIS_SENTINEL_USERNAME, REDIS_SENTINEL_PASSWORD). */
export interface SentinelCredentials {
  readonly sentinelUsername?: string | undefined;
  readonly sentinelPassword?: string | undefined;
}

/** How long a sentinel may take to name the primary before the next one is asked. */
export const SENTINEL_COMMAND_TIMEOUT_MS = 1_000;

/**
 * The ioredis options of a client of the primary that the sentinels of `target` name,
 * with ioredis's own Sentinel support: each connection, the first and each one made
 * again, asks the sentinels in turn for the primary's address (`SENTINEL
 * get-master-addr-by-name`), connects there, and checks in its ready check that the node
 * is a primary (a replica is left, and the sentinels asked again). After a failover the
 * old primary's connections fail (it is gone, or the sentinels make it a replica and
 * close its clients), or, where it is cut off and silent, the answer watch closes them
 * (redis/answer-watch.ts): either way the next connection is made to the promoted
 * replica, at most `RECONNECT_MOST_MS` apart (redis-client.ts). Sentinels that answer
 * nothing are tried again after at most a second. `tls`, for `rediss+sentinel://`, goes
 * to the sentinels and the data nodes alike.
 *
 * No failover detector (ioredis's `failoverDetector`, which closes the connection at a
 * sentinel's `+switch-master`): when the message comes while the client is asking the
 * sentinels for the primary, ioredis 5 ends the client for good instead of connecting it
 * again, and every call would then fail UNAVAILABLE until a restart (the answer watch
 * guards its own recycling against that, redis/answer-watch.ts).
 */
export function sentinelOptions(
  target: Extract<RedisTarget, { kind: "sentinel" }>,
  credentials: SentinelCredentials,
  tls: RedisTls | undefined,
): RedisOptions {
  return {
    sentinels: target.sentinels.map((s) => ({ ...s })),
    name: target.name,
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(credentials.sentinelUsername === undefined
      ? {}
      : { sentinelUsername: credentials.sentinelUsername }),
    ...(credentials.sentinelPassword === undefined
      ? {}
      : { sentinelPassword: credentials.sentinelPassword }),
    ...(tls === undefined ? {} : sentinelTlsOptions(tls)),
    sentinelCommandTimeout: SENTINEL_COMMAND_TIMEOUT_MS,
    sentinelRetryStrategy: (times: number) => Math.min(times * 50, 1_000),
  };
}

/** Whether `node` reaches Redis through sentinels. */
export function isSentinelClient(node: Redis): boolean {
  return Array.isArray(node.options.sentinels) && node.options.sentinels.length > 0;
}

/**
 * The address `node` is connected to, as the messages name it: for a client of the
 * sentinels, the primary they named last (its socket's peer), not an address of the
 * options.
 */
export function connectedAddress(node: Redis): string | undefined {
  const stream = node.stream as Socket | undefined;
  if (stream?.remoteAddress === undefined) return undefined;
  const host = stream.remoteAddress.includes(":")
    ? `[${stream.remoteAddress}]`
    : stream.remoteAddress;
  return `${host}:${stream.remotePort}`;
}
