import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { freePort, type RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { type PemPair, redisTlsArgs } from "./redis-tls.js";
import { startTestRedis, TEST_REDIS_CLI } from "./store-server.js";
import type { TestCa } from "./tls-cert.js";

const run = promisify(execFile);

/** How to start a local cluster. */
export interface RedisClusterOptions {
  /** How many primaries; 3 by default, the least Redis Cluster accepts. */
  readonly primaries?: number;
  /** Replicas of each primary (`--cluster-replicas`); 0 by default. */
  readonly replicas?: number;
  /** `cluster-node-timeout` in ms: how soon the others mark a silent node as failing. */
  readonly nodeTimeoutMs?: number;
  /**
   * TLS alone, to clients and on the cluster bus (`tls-cluster yes`, `tls-replication
   * yes`): every node presents `identity`, which `ca` signed; no client certificate is
   * asked for. The URL is then `rediss+cluster://`.
   */
  readonly tls?: { readonly identity: PemPair; readonly ca: TestCa };
}

/** One node of a local cluster: its process (replaced on restart), port and folder. */
export interface ClusterNode {
  readonly port: number;
  /** Its cluster bus port (`cluster-port`), chosen free like the client port. */
  readonly busPort: number;
  readonly dir: string;
  process: RedisServerProcess | undefined;
}

/** A running local Redis Cluster of the tests' own. */
export interface LocalRedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,...`, the service's cluster setting. */
  readonly url: string;
  readonly nodes: readonly ClusterNode[];
  /** The node that serves a hash slot now. */
  nodeOfSlot(slot: number): Promise<ClusterNode>;
  /**
   * Moves one slot, with its keys, from the primary that serves it to `to`, as
   * `redis-cli --cluster reshard` does (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE of
   * its keys, CLUSTER SETSLOT NODE on every primary).
   */
  moveSlot(slot: number, to: ClusterNode): Promise<void>;
  /** Asks one node (any live one when omitted) for `CLUSTER KEYSLOT key`. */
  keySlot(key: string): Promise<number>;
  /** kill -9 of one node, as a crash would; waits for the exit. */
  kill(node: ClusterNode): Promise<void>;
  /** Starts a killed node again on its port and folder (its AOF and nodes.conf). */
  restart(node: ClusterNode): Promise<void>;
  /** Waits until every live node reports `cluster_state:ok` and knows every slot. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes their folders. */
  stop(): Promise<void>;
}

/**
 * Starts a real Redis Cluster on loopback: `primaries` redis-servers with
 * `--cluster-enabled yes`, each on free client and bus ports with its own data folder
 * (AOF on, `appendfsync always`), joined by `redis-cli --cluster create` with no
 * replicas. `cluster-require-full-coverage no` lets the live primaries keep serving
 * their slots while one is down, as docs/redis-cluster.md recommends.
 */
export async function startRedisCluster(
  options: RedisClusterOptions = {},
): Promise<LocalRedisCluster> {
  const primaries = options.primaries ?? 3;
  const replicas = options.replicas ?? 0;
  const count = primaries * (1 + replicas);
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2_000;
  const tls = options.tls;
  const root = mkdtempSync(join(tmpdir(), "suggest-task-cluster-"));
  const nodes: ClusterNode[] = [];
  const ports = new Set<number>();
  while (ports.size < count * 2) ports.add(await freePort());
  const [clientPorts, busPorts] = [[...ports].slice(0, count), [...ports].slice(count)];
  for (let i = 0; i < count; i++) {
    nodes.push({
      port: clientPorts[i] as number,
      busPort: busPorts[i] as number,
      dir: join(root, `node-${i}`),
      process: undefined,
    });
  }
  const start = async (node: ClusterNode) => {
    node.process = await startTestRedis({
      dir: node.dir,
      port: node.port,
      extraArgs: [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        join(node.dir, "nodes.conf"),
        "--cluster-node-timeout",
        String(nodeTimeoutMs),
        "--cluster-port",
        String(node.busPort),
        "--cluster-require-full-coverage",
        "no",
        // A replica fails over however long ago it last heard its primary (a fresh one
        // may not have synced yet when a test kills the primary).
        "--cluster-replica-validity-factor",
        "0",
        ...(tls === undefined
          ? []
          : [
              ...redisTlsArgs(node.port, tls.identity, tls.ca, false),
              ...["--tls-cluster", "yes", "--tls-replication", "yes"],
            ]),
      ],
    });
  };
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.process?.stop()));
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await Promise.all(nodes.map(start));
    await run(TEST_REDIS_CLI, [
      "--cluster",
      "create",
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      "--cluster-replicas",
      String(replicas),
      "--cluster-yes",
      ...(tls === undefined ? [] : ["--tls", "--cacert", tls.ca.cert]),
    ]);
  } catch (err) {
    await stop();
    throw err;
  }

  const ask = async <T>(node: ClusterNode, fn: (r: Redis) => Promise<T>): Promise<T> => {
    const r = new Redis(node.port, "127.0.0.1", {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1_000,
      lazyConnect: true,
      ...(tls === undefined ? {} : { tls: { ca: readFileSync(tls.ca.cert), checkServerIdentity } }),
    });
    r.on("error", () => {});
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  };
  const live = () => nodes.filter((n) => n.process !== undefined);
  const cluster: LocalRedisCluster = {
    url: `${tls === undefined ? "redis" : "rediss"}+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}`,
    nodes,
    async nodeOfSlot(slot) {
      const ranges = await ask(live()[0] as ClusterNode, (r) => r.cluster("SLOTS"));
      const range = ranges.find(([from, to]) => slot >= from && slot <= to);
      const node = nodes.find((n) => n.port === range?.[2]?.[1]);
      if (node === undefined) throw new Error(`no node serves slot ${slot}`);
      return node;
    },
    async moveSlot(slot, to) {
      const from = await cluster.nodeOfSlot(slot);
      if (from === to) return;
      const id = (node: ClusterNode) => ask(node, (r) => r.cluster("MYID") as Promise<string>);
      const [fromId, toId] = [await id(from), await id(to)];
      await ask(to, (r) => r.cluster("SETSLOT", slot, "IMPORTING", fromId));
      await ask(from, (r) => r.cluster("SETSLOT", slot, "MIGRATING", toId));
      await ask(from, async (r) => {
        for (;;) {
          const keys = (await r.cluster("GETKEYSINSLOT", slot, 100)) as string[];
          if (keys.length === 0) return;
          await r.migrate("127.0.0.1", to.port, "", 0, 5_000, "KEYS", ...keys);
        }
      });
      for (const node of [to, from, ...live().filter((n) => n !== to && n !== from)]) {
        await ask(node, (r) => r.cluster("SETSLOT", slot, "NODE", toId)).catch(() => {
          // A replica refuses SETSLOT; it learns the slot's new owner from its primary.
        });
      }
    },
    async keySlot(key) {
      return ask(live()[0] as ClusterNode, (r) => r.cluster("KEYSLOT", key));
    },
    async kill(node) {
      await node.process?.kill();
      node.process = undefined;
    },
    async restart(node) {
      if (node.process === undefined) await start(node);
    },
    async waitHealthy(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const states = await Promise.all(
          live().map((n) => ask(n, (r) => r.cluster("INFO")).catch(() => "")),
        );
        if (states.every((s) => /cluster_state:ok/.test(s) && /cluster_slots_ok:16384/.test(s)))
          return;
        if (Date.now() > deadline) throw new Error(`cluster not healthy:\n${states.join("\n")}`);
        await delay(100);
      }
    },
    stop,
  };
  try {
    await cluster.waitHealthy();
  } catch (err) {
    await stop();
    throw err;
  }
  return cluster;
}

/** The nodes' certificate may name a host other than their address: the chain is checked. */
const checkServerIdentity = () => undefined;

/** `INFO replication` of `node`, or "" while it does not answer. */
export async function replicationInfo(node: ClusterNode): Promise<string> {
  const r = new Redis(node.port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0 });
  r.on("error", () => undefined);
  try {
    await r.connect();
    return await r.info("replication");
  } catch {
    return "";
  } finally {
    r.disconnect();
  }
}

/** Resolves once each of `primaries` has a replica online (30 s each at most). */
export async function replicasOnline(primaries: readonly ClusterNode[]): Promise<void> {
  for (const node of primaries) {
    for (let i = 0; !/^slave0:.*state=online/m.test(await replicationInfo(node)); i++) {
      if (i === 300) throw new Error(`the replica of 127.0.0.1:${node.port} is not online`);
      await delay(100);
    }
  }
}
