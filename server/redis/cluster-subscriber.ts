import { createConnection, type Socket } from "node:net";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { AbstractConnector, type Cluster, Redis, type RedisOptions } from "ioredis";
import type { ClusterSeed } from "./redis-url.js";

/**
 * The addresses a subscriber may use: every node the cluster client knows now, then the
 * seeds it started from (in case it knows none at the moment).
 */
function candidates(cluster: Cluster, seeds: readonly ClusterSeed[]): ClusterSeed[] {
  const seen = new Set<string>();
  const all: ClusterSeed[] = [];
  const known = cluster.nodes("all").map((n) => ({
    host: n.options.host ?? "127.0.0.1",
    port: n.options.port ?? 6379,
  }));
  for (const node of [...known, ...seeds]) {
    const key = `${node.host}:${node.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    all.push(node);
  }
  return all;
}

/**
 * A connection for SUBSCRIBE on a Redis Cluster: a plain client of one node, which
 * moves to the next node on every reconnection.
 *
 * PUBLISH (as the scripts do it) reaches the subscribers of every node of a cluster, so
 * any one node will do. ioredis's own cluster subscriber moves between nodes too, but
 * silently; this one is an ordinary `Redis` client that emits `ready` after each
 * reconnection and resubscribes its channels by itself, so the watch hub and the start
 * locks know, exactly as on one Redis, that messages may have been lost meanwhile and
 * read again (test/cluster/cluster-failover.test.ts kills the node it listens on).
 */
export function clusterSubscriber(
  cluster: Cluster,
  seeds: readonly ClusterSeed[],
  options: RedisOptions = {},
): Redis {
  // Instances start on different nodes, so that their subscribers spread over the cluster.
  let turn = Math.floor(Math.random() * 1_000);
  const tls = cluster.options.redisOptions?.tls;
  /** Opens the socket to the next node in turn; ioredis does the rest. */
  class RotatingConnector extends AbstractConnector {
    constructor(connectionOptions: unknown) {
      const { disconnectTimeout } = connectionOptions as RedisOptions;
      super(disconnectTimeout ?? 2_000);
    }

    override connect(): Promise<Socket | TLSSocket> {
      const nodes = candidates(cluster, seeds);
      const node = nodes[turn++ % nodes.length];
      this.connecting = true;
      return new Promise((resolve, reject) => {
        if (node === undefined) {
          // The cluster client knows no node yet: ioredis retries a moment later.
          reject(new Error("no node of the cluster is known yet"));
          return;
        }
        // As ioredis's own connector: open the socket on the next tick, unless a
        // disconnect came first.
        process.nextTick(() => {
          if (!this.connecting) {
            reject(new Error("Connection is closed."));
            return;
          }
          const stream =
            tls === undefined
              ? createConnection({ host: node.host, port: node.port })
              : tlsConnect({ ...tls, host: node.host, port: node.port });
          stream.once("error", (err) => {
            this.firstError = err;
          });
          this.stream = stream;
          resolve(stream);
        });
      });
    }
  }
  const { redisOptions = {} } = cluster.options;
  return new Redis({
    ...redisOptions,
    ...options,
    Connector: RotatingConnector,
    enableAutoPipelining: false,
  });
}
