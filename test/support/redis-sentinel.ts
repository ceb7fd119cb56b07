import type { ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { ConnectionOptions } from "node:tls";
import { Redis } from "ioredis";
import { freePort, type RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { spawnWithOutput } from "./child-output.js";
import { tempDir } from "./harness.js";
import { type PemPair, redisTlsArgs } from "./redis-tls.js";
import { startTestRedis, TEST_REDIS_SERVER } from "./store-server.js";
import type { TestCa } from "./tls-cert.js";

/*
 * A Redis Sentinel deployment of a test's own: a primary, its replicas and the
 * sentinels that watch them, each a real process (`redis-server <conf> --sentinel`, or the server `SUGGEST_TEST_REDIS_SERVER` names) on
 * free ports, with folders of their own.
 */

export interface SentinelSetOptions {
  /** Replicas of the first primary; 2 by default. */
  readonly replicas?: number;
  /** Sentinels; 3 by default (quorum 2). */
  readonly sentinels?: number;
  /** The data nodes' password (`requirepass`, `masterauth`); none by default. */
  readonly dataPassword?: string;
  /** The sentinels' own password (`requirepass`, `sentinel sentinel-pass`); none by default. */
  readonly sentinelPassword?: string;
  /** Extra `redis-server` arguments of data node `i` (0: the first primary). */
  readonly nodeArgs?: (i: number) => readonly string[];
  /**
   * TLS alone on every data node and sentinel (`tls-replication yes`: replicas and the
   * sentinels reach the data nodes over TLS), each presenting `identity`, which `ca`
   * signed; no client certificate asked for. The URL is then `rediss+sentinel://`.
   */
  readonly tls?: { readonly identity: PemPair; readonly ca: TestCa };
}

export interface SentinelProcess {
  readonly port: number;
  kill(): Promise<void>;
}

export interface LocalSentinelSet {
  /** The master's name in the sentinels' configuration. */
  readonly name: string;
  /** The data nodes: the first primary, then its replicas. */
  readonly nodes: RedisServerProcess[];
  readonly sentinels: SentinelProcess[];
  /** `redis+sentinel://` naming every sentinel and the master. */
  readonly url: string;
  /** A data node's client (with the data password); the caller disconnects it. */
  node(port: number): Redis;
  /** A sentinel's client (with the sentinels' password); the caller disconnects it. */
  sentinel(i?: number): Redis;
  /** The primary's port as the first sentinel names it. */
  primaryPort(): Promise<number>;
  /**
   * Every `+switch-master` any sentinel publishes from now on, as it arrives: the new
   * primary's port and the moment it was heard (the earliest sentinel's for each port).
   */
  switches(): Promise<Switches>;
  /** Waits until every sentinel names one primary with `replicas` replicas online. */
  settled(replicas: number, timeoutMs?: number): Promise<number>;
  close(): Promise<void>;
}

export interface Switches {
  readonly seen: { port: number; at: number }[];
  /** The first switch after `from` entries, once it comes. */
  next(from: number, timeoutMs: number): Promise<{ port: number; at: number }>;
  stop(): void;
}

/** Starts the data nodes, then the sentinels, and waits until the sentinels see the replicas. */
export async function startSentinelSet(
  options: SentinelSetOptions = {},
): Promise<LocalSentinelSet> {
  const name = "suggest-primary";
  const tls = options.tls;
  const password = options.dataPassword;
  const auth = password === undefined ? [] : ["--requirepass", password, "--masterauth", password];
  const dirs: { remove: () => void }[] = [];
  const nodes: RedisServerProcess[] = [];
  const sentinels: SentinelProcess[] = [];
  const close = async () => {
    for (const s of sentinels) await s.kill().catch(() => {});
    for (const n of nodes) await n.kill().catch(() => {});
    for (const d of dirs) d.remove();
  };
  try {
    for (let i = 0; i <= (options.replicas ?? 2); i++) {
      const dir = tempDir(`sentinel-node-${i}`);
      dirs.push(dir);
      const primary = nodes[0];
      const tlsPort = tls === undefined ? undefined : await freePort();
      nodes.push(
        await startTestRedis({
          dir: dir.dir,
          ...(tlsPort === undefined ? {} : { port: tlsPort }),
          extraArgs: [
            ...auth,
            // A replica's first copy at once, not after the default 5 s of diskless sync
            // delay: the replicas of a promoted node are online, and writes that wait for
            // them served, within moments of a failover (docs/redis.md).
            ...["--repl-diskless-sync-delay", "0"],
            ...(tls === undefined || tlsPort === undefined
              ? []
              : [
                  ...redisTlsArgs(tlsPort, tls.identity, tls.ca, false),
                  ...["--tls-replication", "yes"],
                ]),
            ...(primary === undefined ? [] : ["--replicaof", "127.0.0.1", String(primary.port)]),
            ...(options.nodeArgs?.(i) ?? []),
          ],
        }),
      );
    }
    const primaryPort = (nodes[0] as RedisServerProcess).port;
    for (let i = 0; i < (options.sentinels ?? 3); i++) {
      const dir = tempDir(`sentinel-${i}`);
      dirs.push(dir);
      sentinels.push(await startSentinel(dir.dir, name, primaryPort, options));
    }
  } catch (err) {
    await close();
    throw err;
  }
  const set: LocalSentinelSet = {
    name,
    nodes,
    sentinels,
    url: `${tls === undefined ? "redis" : "rediss"}+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(",")}/${name}`,
    node: (port) => quiet(new Redis({ port, password, ...tlsOf(tls) })),
    sentinel: (i = 0) =>
      quiet(
        new Redis({
          port: (sentinels[i] as SentinelProcess).port,
          password: options.sentinelPassword,
          ...tlsOf(tls),
        }),
      ),
    async primaryPort() {
      const client = set.sentinel();
      try {
        const reply = (await client.call("SENTINEL", "get-master-addr-by-name", name)) as string[];
        return Number(reply[1]);
      } finally {
        client.disconnect();
      }
    },
    switches: () => watchSwitches(set),
    settled: (replicas, timeoutMs = 30_000) => settled(set, replicas, timeoutMs),
    close,
  };
  try {
    await settled(set, options.replicas ?? 2, 30_000);
  } catch (err) {
    await close();
    throw err;
  }
  return set;
}

/** A test client's TLS options: the CA's chain checked, any name (nodes are reached by address). */
function tlsOf(tls: SentinelSetOptions["tls"]): { tls?: ConnectionOptions } {
  if (tls === undefined) return {};
  return { tls: { ca: readFileSync(tls.ca.cert), checkServerIdentity: () => undefined } };
}

function quiet(client: Redis): Redis {
  client.on("error", () => {});
  return client;
}

async function startSentinel(
  dir: string,
  name: string,
  primaryPort: number,
  options: SentinelSetOptions,
): Promise<SentinelProcess> {
  const port = await freePort();
  const conf = join(dir, "sentinel.conf");
  const lines = [
    ...(options.tls === undefined
      ? [`port ${port}`]
      : [
          "port 0",
          `tls-port ${port}`,
          `tls-cert-file ${options.tls.identity.cert}`,
          `tls-key-file ${options.tls.identity.key}`,
          `tls-ca-cert-file ${options.tls.ca.cert}`,
          "tls-auth-clients no",
          "tls-replication yes",
        ]),
    "bind 127.0.0.1",
    `dir ${dir}`,
    "daemonize no",
    'logfile ""',
    `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
    `sentinel down-after-milliseconds ${name} 1000`,
    `sentinel failover-timeout ${name} 4000`,
    `sentinel parallel-syncs ${name} 2`,
    ...(options.dataPassword === undefined
      ? []
      : [`sentinel auth-pass ${name} ${options.dataPassword}`]),
    ...(options.sentinelPassword === undefined
      ? []
      : [
          `requirepass ${options.sentinelPassword}`,
          `sentinel sentinel-pass ${options.sentinelPassword}`,
        ]),
  ];
  writeFileSync(conf, `${lines.join("\n")}\n`);
  const { child, output, exited } = spawnWithOutput(TEST_REDIS_SERVER, [conf, "--sentinel"]);
  const until = Date.now() + 10_000;
  while (!/Sentinel ID is/.test(output())) {
    if (child.exitCode !== null || Date.now() > until) {
      throw new Error(`the sentinel on port ${port} did not start:\n${output()}`);
    }
    await sleep(20);
  }
  return { port, kill: () => killed(child, exited) };
}

async function killed(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await exited;
}

async function watchSwitches(set: LocalSentinelSet): Promise<Switches> {
  const seen: { port: number; at: number }[] = [];
  const clients = set.sentinels.map((_, i) => set.sentinel(i));
  for (const client of clients) {
    client.on("message", (_channel: string, message: string) => {
      // "<name> <old ip> <old port> <new ip> <new port>"
      const port = Number(message.split(" ")[4]);
      if (seen.at(-1)?.port !== port) seen.push({ port, at: Date.now() });
    });
    await client.subscribe("+switch-master");
  }
  return {
    seen,
    async next(from, timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (seen.length <= from) {
        if (Date.now() > until) throw new Error(`no failover in ${timeoutMs} ms`);
        await sleep(10);
      }
      return seen[from] as { port: number; at: number };
    },
    stop: () => {
      for (const client of clients) client.disconnect();
    },
  };
}

async function settled(
  set: LocalSentinelSet,
  replicas: number,
  timeoutMs: number,
): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const port = await agreedPrimary(set, replicas).catch(() => undefined);
    if (port !== undefined) {
      const client = set.node(port);
      const info = await client.info("replication").catch(() => "");
      client.disconnect();
      if (primaryReplicasOnline(info) >= replicas) return port;
    }
    if (Date.now() > until) throw new Error("the sentinels never settled on one primary");
    await sleep(100);
  }
}

/**
 * How many replicas `INFO replication` shows online on a node that is a primary; 0 on
 * a replica.
 */
export function primaryReplicasOnline(info: string): number {
  if (!/^role:master/m.test(info)) return 0;
  return info.match(/^slave\d+:.*state=online/gm)?.length ?? 0;
}

/**
 * The primary every sentinel names, when they agree, each knows every other sentinel
 * (a failover needs a majority of them) and sees `replicas` replicas.
 */
async function agreedPrimary(set: LocalSentinelSet, replicas: number): Promise<number | undefined> {
  const ports = new Set<string>();
  for (let i = 0; i < set.sentinels.length; i++) {
    const client = set.sentinel(i);
    try {
      const flat = (await client.call("SENTINEL", "master", set.name)) as string[];
      const field = (key: string) => flat[flat.indexOf(key) + 1];
      if (Number(field("num-other-sentinels")) < set.sentinels.length - 1) return undefined;
      if (Number(field("num-slaves")) < replicas) return undefined;
      ports.add(field("port") as string);
    } finally {
      client.disconnect();
    }
  }
  return ports.size === 1 ? Number([...ports][0]) : undefined;
}
