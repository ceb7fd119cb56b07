import type { Socket } from "node:net";
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { type SentinelCredentials, sentinelOptions } from "./redis-sentinel.js";
import { clusterTlsOptions, type RedisTls, singleTlsOptions } from "./redis-tls.js";
import { parseRedisUrl } from "./redis-url.js";
import { confirmsPerTurn, sendOwedWait } from "./turn-waits.js";

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
 * (`batchWritesPerTurn`).
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
 * TLS settings of the `rediss` forms (REDIS_TLS_*, redis/redis-tls.ts; none given: Node's
 * CAs, the node's name).
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
 * `createRedisClient`). A `rediss` URL's connections take `access.tls` (REDIS_TLS_*,
 * redis/redis-tls.ts), Node's defaults without it.
 */
export function connectRedis(url: string, access: RedisAccess = {}): RedisClient {
  const target = parseRedisUrl(url);
  if (target.kind !== "cluster") {
    const client =
      target.kind === "sentinel"
        ? new Redis({
            ...defaultRedisOptions,
            ...sentinelOptions(target, access, target.tls ? (access.tls ?? {}) : undefined),
          })
        : target.socket === undefined
          ? new Redis(url, {
              ...defaultRedisOptions,
              ...(url.startsWith("rediss:") ? singleTlsOptions(access.tls) : {}),
            })
          : new Redis({ ...defaultRedisOptions, path: target.socket });
    batchWritesPerTurn(client);
    return client;
  }
  const secure = target.tls ? clusterTlsOptions(access.tls) : undefined;
  const client = new Cluster(
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
  client.on("+node", (node: Redis) => batchWritesPerTurn(node));
  holdCallsOnlyUntilReady(client);
  return client;
}

/**
 * Every connection of `client`, the first and each after a reconnection, writes the
 * commands of one event-loop turn together: its socket is corked at the turn's first
 * write and uncorked once the turn's I/O is done (`setImmediate`), so the turn's
 * commands leave in one `writev` (or one for every COMMANDS_PER_WRITE of them).
 * ioredis's auto-pipelining batches the same way but sends a connection's next batch
 * only once Redis has answered the last one, so with `appendfsync always` every call
 * waited for the fsync of the batch before its own; here the batches follow one another
 * and Redis answers each as it comes. Measured with `npm run bench`
 * (docs/performance.md, "Choices the figures rest on"): Get and SuggestTask made more calls a second for less
 * CPU each; settle and Start moved within the noise. Order is kept (a cork only holds
 * writes back), and the commands a turn writes after the socket closed are ioredis's to
 * retry, as before. Pinned by test/redis/write-batching.test.ts and
 * test/cluster/cluster-write-batching.test.ts.
 */
export function batchWritesPerTurn(client: Redis): void {
  client.on("connect", () => corkEachTurn(client, client.stream as Socket));
}

/**
 * The most commands one write carries. A turn that answers many replies at once (64
 * calls in flight, each a step further) would otherwise write all its next steps at the
 * turn's end, while Redis sits idle, then wait idle itself while Redis runs them all: the
 * two take turns instead of working side by side. Eight to a write lets Redis start on
 * the first while the turn goes on. Measured with `npm run bench`
 * (docs/performance.md, "Choices the figures rest on"): SuggestTask and the
 * settles made about a third more calls a second, for less server CPU each.
 */
export const COMMANDS_PER_WRITE = 8;

/**
 * Corks `socket` (the stream of `connection`) each turn; before it uncorks, the WAIT the
 * turn's confirmed writes owe joins them, unless one is out already
 * (redis/turn-waits.ts `sendOwedWait`).
 */
function corkEachTurn(connection: Redis, socket: Socket): void {
  const write = socket.write;
  let corked = false;
  let held = 0;
  confirmsPerTurn(socket);
  const uncork = () => {
    sendOwedWait(connection, socket);
    corked = false;
    socket.uncork();
  };
  socket.write = function (this: Socket, ...args: Parameters<Socket["write"]>) {
    if (!corked) {
      corked = true;
      held = 0;
      socket.cork();
      setImmediate(uncork);
    } else if (held === COMMANDS_PER_WRITE) {
      held = 0;
      socket.uncork();
      socket.cork();
    }
    held++;
    return write.apply(this, args);
  } as Socket["write"];
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
