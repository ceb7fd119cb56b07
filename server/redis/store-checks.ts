import type { Cluster, Redis } from "ioredis";
import type { RedisClient } from "./redis-client.js";
import { connectedAddress, isSentinelClient } from "./redis-sentinel.js";
import type { RedisSettings } from "./redis-tls.js";
import { storeCondition } from "./store-condition.js";
import { tlsRefusalAt } from "./tls-refusal.js";

/** The only `maxmemory-policy` under which Redis never drops a key it acknowledged. */
export const REQUIRED_POLICY = "noeviction";

/** A node's address as the messages name it: for Sentinel, the primary connected to. */
export function nodeName(node: Redis): string {
  if (isSentinelClient(node)) return connectedAddress(node) ?? `the primary ${node.options.name}`;
  const { host, port, path } = node.options;
  return path ? `unix://${path}` : `${host ?? "127.0.0.1"}:${port ?? 6379}`;
}

/** The primaries of `client`: itself, or every primary of the cluster. */
function primaries(client: RedisClient): Redis[] {
  return client.isCluster ? (client as Cluster).nodes("master") : [client as Redis];
}

/**
 * A node's `maxmemory-policy`: `CONFIG GET`, or, where CONFIG is renamed or refused (as
 * managed services do), `INFO memory`'s `maxmemory_policy`. Undefined when neither tells.
 */
export async function evictionPolicy(node: Redis): Promise<string | undefined> {
  try {
    const reply = (await node.config("GET", "maxmemory-policy")) as string[];
    if (typeof reply[1] === "string") return reply[1];
  } catch {
    // CONFIG renamed or forbidden: INFO below.
  }
  try {
    return /^maxmemory_policy:(\S+)/m.exec(await node.info("memory"))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * What makes the service refuse to run on `client`'s Redis, in one sentence naming the
 * node, or undefined when nothing does: a primary whose `maxmemory-policy` is not
 * `noeviction` (an evicting Redis drops acknowledged offers in silence), or, with
 * `waitReplicas` above 0, a primary with fewer replicas connected than that (`INFO
 * replication`: every write would fail). A policy neither CONFIG nor INFO tells is let
 * pass.
 */
export async function storeProblem(
  client: RedisClient,
  waitReplicas: number,
): Promise<string | undefined> {
  for (const node of primaries(client)) {
    const policy = await evictionPolicy(node);
    if (policy !== undefined && policy !== REQUIRED_POLICY) return evictingMessage(node, policy);
    const replicas = await replicaProblem(node, waitReplicas);
    if (replicas !== undefined) return replicas;
  }
  return undefined;
}

/**
 * With `waitReplicas` above 0, why `node` (a primary) cannot confirm writes: fewer
 * replicas online than that (`INFO replication`); undefined when it can.
 */
export async function replicaProblem(
  node: Redis,
  waitReplicas: number,
): Promise<string | undefined> {
  if (waitReplicas <= 0) return undefined;
  const info = await node.info("replication");
  // Replicas still loading their first copy do not confirm writes yet.
  const connected = info.match(/^slave\d+:.*state=online/gm)?.length ?? 0;
  if (connected >= waitReplicas) return undefined;
  return `REDIS_WAIT_REPLICAS is ${waitReplicas}, and Redis at ${nodeName(node)} has ${connected} replica(s) online (INFO replication): every write would fail; connect ${waitReplicas} replica(s) to it, or lower REDIS_WAIT_REPLICAS`;
}

/**
 * Why the service must not start on `client` (`storeProblem`), or undefined; a Redis that
 * does not answer yet is let pass: calls answer UNAVAILABLE meanwhile, and the eviction
 * policy is checked once it answers (`watchEvictionPolicy`). A TLS handshake with the
 * Redis of `target.redisUrl` that Redis or the service refuses (`redisTls`: REDIS_TLS_*)
 * is no such wait: it stops the start, saying which setting to change
 * (redis/tls-refusal.ts).
 */
export async function storeProblemAtStart(
  client: RedisClient,
  waitReplicas: number,
  target: RedisSettings,
): Promise<string | undefined> {
  const refused = await tlsRefusalAt(target.redisUrl, target.redisTls);
  if (refused !== undefined) return refused;
  try {
    await client.ping();
  } catch {
    return undefined;
  }
  return storeProblem(client, waitReplicas);
}

function evictingMessage(node: Redis, policy: string): string {
  return `Redis at ${nodeName(node)} has maxmemory-policy ${policy}, which evicts keys and would drop acknowledged offers in silence; set maxmemory-policy ${REQUIRED_POLICY} there`;
}

/**
 * Checks the eviction policy again whenever a connection to a node is made again (the
 * node may be another server now, or reconfigured): anything but `noeviction` on a
 * primary makes the problem `eviction` of the client's condition (readiness
 * NOT_SERVING, rpc/health.ts) until a later check finds it gone. Returns the stop.
 */
export function watchEvictionPolicy(client: RedisClient): () => void {
  const condition = storeCondition(client);
  let checking = false;
  let again = false;
  const check = async () => {
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    try {
      do {
        again = false;
        let found: string | undefined;
        for (const node of primaries(client)) {
          const policy = await evictionPolicy(node);
          if (policy !== undefined && policy !== REQUIRED_POLICY) {
            found = evictingMessage(node, policy);
            break;
          }
        }
        condition.set("eviction", found);
      } while (again);
    } catch {
      // Redis not answering: checked again on the next reconnection.
    } finally {
      checking = false;
    }
  };
  const onReady = () => void check();
  const watched: Redis[] = [];
  const watch = (node: Redis) => {
    node.on("ready", onReady);
    watched.push(node);
  };
  if (client.isCluster) {
    const cluster = client as Cluster;
    cluster.on("+node", watch);
    for (const node of cluster.nodes("all")) watch(node);
    cluster.on("ready", onReady);
  } else {
    watch(client as Redis);
  }
  return () => {
    for (const node of watched) node.off("ready", onReady);
    if (client.isCluster) {
      (client as Cluster).off("+node", watch);
      client.off("ready", onReady);
    }
  };
}
