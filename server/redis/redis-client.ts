import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { type SentinelCredentials, sentinelOptions } from "./redis-sentinel.js";
import { clusterTlsOptions, type RedisTls, singleTlsOptions } from "./redis-tls.js";
import { parseRedisUrl } from "./redis-url.js";
import { TurnWrites } from "./turn-waits.js";

/** The service's Redis: one server, or a Redis Cluster; both run the same scripts. */
export type RedisClient = Redis | Cluster;

/**
 * Client settings chosen so that a call never hangs on a Redis that is down: a command
 * fails after one reconnection attempt (and the handler answers UNAVAILABLE) instead of
 * waiting in the offline queue. Reconnection attempts come at most `RECONNECT_MOST_MS`
 * apart, however long the outage, so that a Redis back (or another one behind the same
 * address) is served again within that; a connection that hangs rather than fails is
 * the answer watch's (redis/answer-watch.ts). Commands that were sent but not answered are re-sent
 * after a reconnect (ioredis's default); every script is idempotent for that reason.
 * No auto-pipelining: the connection's writes are batched per event-loop turn instead
 * (redis/turn-waits.ts `TurnWrites`).
 */
export const defaultRedisOptions: Readonly<RedisOptions> = Object.freeze({
  maxRetriesPerRequest: 1,
  connectTimeout: 2_000,
  commandTimeout: 5_000,
  enableAutoPipelining: false,
  retryStrategy: (times: number) => Math.min(times * 50, RECONNECT_MOST_MS),
  // A connection closed on purpose (redis/answer-watch.ts) that the other side does not
  // close too (a host that vanished answers nothing, not even that) is dropped after this.
  disconnectTimeout: 100,
});

/**
 * What a connection needs beyond `REDIS_URL`: the sentinels' own credentials, and the
 * TLS settings of the `rediss` forms (redis/redis-tls.ts; none given: the system's CAs,
 * the node's name).
 */
export interface RedisAccess extends SentinelCredentials {
  readonly tls?: RedisTls | undefined;
}

/** The longest wait between two attempts to connect again to a standalone Redis. */
export const RECONNECT_MOST_MS = 200;

/**
 * Cluster settings with the same aim. A command for the slots of a primary that does
 * not answer is retried every `retryDelayOnFailover` ms (each time after asking a live
 * node for the slot map again, so a promoted replica is found) and fails after
 * `maxRedirections` tries: after about a second, UNAVAILABLE
 * (test/cluster/cluster-failover.test.ts). Each node's connection takes the single
 * client's settings.
 */
export const defaultClusterOptions: Readonly<ClusterOptions> = Object.freeze({
  redisOptions: Object.freeze({
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
  }),
  enableAutoPipelining: false,
  maxRedirections: 16,
  retryDelayOnFailover: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnTryAgain: 100,
  slotsRefreshTimeout: 1_000,
  clusterRetryStrategy: (times: number) => Math.min(100 * times, 2_000),
});

/**
 * A client of the Redis that `url` names: `redis://`, `rediss://` and `unix://` make a `Redis`,
 * `redis+sentinel://` and `rediss+sentinel://` a `Redis` of the primary the sentinels
 * name (redis/redis-sentinel.ts), `redis+cluster://` and `rediss+cluster://` (see
 * `parseRedisUrl`) a `Cluster`. The store defines its scripts on it (store/scripts.ts
 * `createRedisClient`).
 */
export function connectRedis(url: string, access: RedisAccess = {}): RedisClient {
  const target = parseRedisUrl(url);
  if (target.kind !== "cluster") {
    const client =
      target.kind === "sentinel"
        ? new ServiceRedis({
            ...defaultRedisOptions,
            ...sentinelOptions(target, access, target.tls ? (access.tls ?? {}) : undefined),
          })
        : target.socket === undefined
          ? new ServiceRedis(url, {
              ...defaultRedisOptions,
              ...(url.startsWith("rediss:") ? singleTlsOptions(access.tls) : {}),
            })
          : new ServiceRedis({ ...defaultRedisOptions, path: target.socket });
    return client;
  }
  const secure = target.tls ? clusterTlsOptions(access.tls) : undefined;
  const client = new ServiceCluster(
    target.seeds.map((s) => ({ ...s })),
    {
      ...defaultClusterOptions,
      ...(secure === undefined ? {} : { dnsLookup: secure.dnsLookup }),
      redisOptions: {
        ...defaultClusterOptions.redisOptions,
        ...(target.username === undefined ? {} : { username: target.username }),
        ...(target.password === undefined ? {} : { password: target.password }),
        ...secure?.redisOptions,
      },
    },
  );
  holdCallsOnlyUntilReady(client);
  return client;
}

/** A standalone Redis as the service makes it: its writes leave once a turn (`turns`). */
class ServiceRedis extends Redis {
  readonly turns = new TurnWrites();

  constructor(...args: [url: string, options: RedisOptions] | [options: RedisOptions]) {
    super(...(args as [string, RedisOptions]));
    this.on("connect", () => this.turns.connected(this));
  }
}

/** A Redis Cluster as the service makes it: each node's writes leave once a turn (`turns`). */
class ServiceCluster extends Cluster {
  readonly turns = new TurnWrites();

  constructor(...args: ConstructorParameters<typeof Cluster>) {
    super(...args);
    this.on("+node", (node: Redis) => node.on("connect", () => this.turns.connected(node)));
  }
}

/**
 * The writes of `client`'s connections (redis/turn-waits.ts): the client's own, made by
 * `connectRedis`; undefined for a client made otherwise, whose writes leave as ioredis
 * writes them.
 */
export function turnsOf(client: RedisClient): TurnWrites | undefined {
  return client instanceof ServiceRedis || client instanceof ServiceCluster
    ? client.turns
    : undefined;
}

/**
 * ioredis queues a cluster's commands while the cluster as a whole is not ready, with
 * no bound. The first connection is worth waiting for (a client is used as soon as it is
 * made), but a cluster lost later should fail calls at once, as a standalone Redis does:
 * the queue is turned off whenever the cluster stops being ready, and on again once it
 * is (while ready, it only covers the moment a node's connection opens). Pinned by
 * test/cluster/cluster-failover.test.ts (every primary down: UNAVAILABLE at once).
 */
function holdCallsOnlyUntilReady(cluster: Cluster): void {
  cluster.on("ready", () => {
    cluster.options.enableOfflineQueue = true;
  });
  for (const event of ["close", "reconnecting", "end"]) {
    cluster.on(event, () => {
      cluster.options.enableOfflineQueue = false;
    });
  }
}

/**
 * The client for SSUBSCRIBE beside `client`: a duplicate of a standalone Redis (it emits
 * `ready` after every reconnection, and store/pubsub.ts subscribes it again), or, for a cluster, a
 * duplicate of the cluster client with ioredis's sharded subscribers: a SSUBSCRIBE goes
 * to a connection of the primary that owns the channel's slot, opened at the first
 * channel of that primary, so an instance holds at most one subscriber connection per
 * primary with a watched channel (and one more to ask for the slot map). What it does
 * when a slot moves or a primary fails over is store/pubsub.ts's.
 */
export function subscriberConnection(client: RedisClient): Redis | Cluster {
  // Subscribed again by store/pubsub.ts, which handles a failure and resyncs after it.
  if (client instanceof Redis)
    return client.duplicate({ ...SUBSCRIBER_OPTIONS, autoResubscribe: false });
  const redisOptions = client.options.redisOptions ?? {};
  return client.duplicate([], {
    ...SUBSCRIBER_OPTIONS,
    shardedSubscribers: true,
    redisOptions: {
      ...redisOptions,
      ...SUBSCRIBER_OPTIONS,
      connectionName: "suggest-task-subscriber",
    },
  });
}

/**
 * No ready check on a subscriber: after a reconnection ioredis would send its INFO on a
 * connection already marked as subscribed, have it refused ("only subscriber commands
 * may be used") and reject every SUBSCRIBE waiting with it, failing the watchers of
 * those sessions. Seen with 10,000 watchers opening under load (bench/watch-load.ts).
 *
 * No client name or library info either: without a ready check, ioredis marks the
 * connection ready once those commands are answered or failed, even when the socket
 * closed meanwhile (an address that accepts and then drops the connection, as a proxy
 * in front of a Redis that is down does), and the client then stays "ready" on a closed
 * socket for good, never connecting again. With no such commands it is ready at once.
 */
const SUBSCRIBER_OPTIONS = Object.freeze({
  enableAutoPipelining: false,
  enableReadyCheck: false,
  disableClientInfo: true,
});
