/**
 * What the change notices cost a Redis Cluster as it grows (part of `npm run bench`
 * with `BENCH_CLUSTER=1`, or alone: `node --import tsx bench/cluster-notices.ts`).
 *
 * A 3-primary and a 9-primary cluster of their own (no replicas, AOF `appendfsync
 * always`, on loopback), both up for the whole measurement. Offers on fresh chats
 * through one instance's store (`CLUSTER_NOTICES_OFFERS`, 12,000 by default, each time),
 * in rounds that alternate the clusters (3 then 9, 9 then 3, ...; `CLUSTER_NOTICES_ROUNDS`,
 * 3 by default), each cluster measured three times a round, in four pairings:
 * - at the same load per primary: 64 offers in flight on 3 primaries, 192 on 9 (the
 *   headline: what a primary added brings), and 21 on 3 against 64 on 9;
 * - at the same load in all: 64 in flight on both. The 9 primaries then each get a third
 *   of the calls at once, so each of their event-loop turns reads, writes and fsyncs
 *   the AOF for fewer offers (the offers per read are printed): that costs more per
 *   offer whatever the notices do (as 21 on 3 against 64 on 9 shows), and it is what a
 *   cluster made larger for no more load pays;
 * - at a light load in all: 8 in flight on both, where a node's turns carry one or two
 *   offers on either cluster, so each offer pays for itself, notices included.
 *
 * Redis CPU per offer: utime + stime of every redis-server (/proc/<pid>/stat) during
 * the offers, less each node's idle rate (the cluster bus's gossip) measured over 2 s
 * right before; each figure is the median of its rounds, and the ratio the median of
 * the rounds' ratios (each round's two clusters measured within seconds of each other).
 * Then where the notices go: the publish messages each node received over the cluster
 * bus (CLUSTER INFO `cluster_stats_messages_publish*_received`) during the rounds, and,
 * on a 3-primary cluster with one replica each, that a shard message reaches its
 * primary's replica alone.
 */
import { readFileSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { Redis } from "ioredis";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { type LocalRedisCluster, startRedisCluster } from "../test/support/redis-cluster.js";
import { median } from "./stats.js";

const OFFERS = Number(process.env.CLUSTER_NOTICES_OFFERS ?? 12_000);
const ROUNDS = Number(process.env.CLUSTER_NOTICES_ROUNDS ?? 3);
/** Offers in flight on 3 and on 9 primaries, in each pairing measured. */
const PAIRINGS = [
  { name: "same load per primary", three: 64, nine: 192 },
  { name: "same load per primary, lighter", three: 21, nine: 64 },
  { name: "same calls in flight", three: 64, nine: 64 },
  { name: "same calls in flight, light", three: 8, nine: 8 },
] as const;
const IDLE_MS = 2_000;
const TICK_US = 1e6 / 100; // USER_HZ

function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** Asks every node of `cluster` the same thing. */
async function ask<T>(cluster: LocalRedisCluster, fn: (r: Redis) => Promise<T>): Promise<T[]> {
  return Promise.all(
    cluster.nodes.map(async (n) => {
      const r = new Redis(n.port, "127.0.0.1");
      try {
        return await fn(r);
      } finally {
        r.disconnect();
      }
    }),
  );
}

/** What each node counted so far: bus publish messages received, reads, SPUBLISH calls. */
interface NodeCounts {
  readonly busPublishes: number;
  readonly reads: number;
  readonly spublishes: number;
}

async function counts(cluster: LocalRedisCluster): Promise<NodeCounts[]> {
  return ask(cluster, async (r) => {
    const info = (await r.cluster("INFO")) as string;
    const stats = await r.info("stats");
    const commands = await r.info("commandstats");
    let busPublishes = 0;
    for (const m of info.matchAll(/^cluster_stats_messages_publish\w*_received:(\d+)/gm)) {
      busPublishes += Number(m[1]);
    }
    return {
      busPublishes,
      reads: Number(/total_reads_processed:(\d+)/.exec(stats)?.[1] ?? 0),
      spublishes: Number(/cmdstat_spublish:calls=(\d+)/.exec(commands)?.[1] ?? 0),
    };
  });
}

const less = (after: NodeCounts[], before: NodeCounts[]) =>
  after.map((a, i) => {
    const b = before[i] as NodeCounts;
    return {
      busPublishes: a.busPublishes - b.busPublishes,
      reads: a.reads - b.reads,
      spublishes: a.spublishes - b.spublishes,
    };
  });

/** One measured batch of offers. */
export interface NoticesRun {
  readonly primaries: number;
  readonly inFlight: number;
  readonly cpuUsPerOffer: number;
  readonly idleCores: number;
  readonly offersPerSecond: number;
  /** Offers each read of a node carried, on average: how well its turns batch. */
  readonly offersPerRead: number;
  /** Per node: publish messages received over the bus, SPUBLISH calls it ran. */
  readonly busPublishes: readonly number[];
  readonly spublishes: readonly number[];
}

async function offers(
  store: SuggestionStore,
  run: string,
  inFlight: number,
  count = OFFERS,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const i = next++;
        await store.offer(
          `bench-${run}-${i}`,
          {
            id: `o-${i}`,
            turnId: "t",
            toolCallId: "",
            title: "A title",
            tldr: "Worth doing",
            brief: "Do the follow-up.",
          },
          false,
        );
      }
    }),
  );
}

/** `OFFERS` offers on fresh chats, `inFlight` at once, the Redis CPU they cost. */
async function measure(
  cluster: LocalRedisCluster,
  store: SuggestionStore,
  primaries: number,
  inFlight: number,
): Promise<NoticesRun> {
  const pids = cluster.nodes.map((n) => n.process?.pid as number);
  const idleFrom = pids.map(cpuUs);
  const idleStart = performance.now();
  await delay(IDLE_MS);
  const idleUsPerMs =
    pids.map(cpuUs).reduce((s, v, i) => s + v - (idleFrom[i] as number), 0) /
    (performance.now() - idleStart);
  const countsBefore = await counts(cluster);
  const before = pids.map(cpuUs);
  const start = performance.now();
  await offers(store, `${primaries}-${inFlight}-${Date.now()}`, inFlight);
  const ms = performance.now() - start;
  const used = pids.map(cpuUs).reduce((s, v, i) => s + v - (before[i] as number), 0);
  const during = less(await counts(cluster), countsBefore);
  const reads = during.reduce((s, c) => s + c.reads, 0);
  return {
    primaries,
    inFlight,
    cpuUsPerOffer: (used - idleUsPerMs * ms) / OFFERS,
    idleCores: idleUsPerMs / 1_000,
    offersPerSecond: OFFERS / (ms / 1_000),
    offersPerRead: OFFERS / Math.max(1, reads),
    busPublishes: during.map((c) => c.busPublishes),
    spublishes: during.map((c) => c.spublishes),
  };
}

/** Each node of a 3-primary cluster with one replica each: what the shard messages reached. */
export interface ShardNode {
  readonly role: "primary" | "replica";
  /** Its primary's port, for a replica; its own for a primary. */
  readonly shardPort: number;
  readonly port: number;
  /** SPUBLISH calls it ran (a primary: the scripts' notices of its slots). */
  readonly spublishes: number;
  /** Publish messages it received over the cluster bus. */
  readonly busPublishes: number;
}

/** 600 offers on a 3 + 3 cluster: which nodes the shard messages reached. */
export async function shardCheck(): Promise<ShardNode[]> {
  const cluster = await startRedisCluster({ primaries: 3, replicas: 1 });
  try {
    const redis = createRedisClient(cluster.url);
    const store = new SuggestionStore(redis);
    await redis.ping();
    // A primary tells the nodes it knows as its replicas: wait until each knows its own
    // and each replica is linked.
    for (let i = 0; ; i++) {
      const ready = await ask(cluster, async (r) => {
        const info = await r.info("replication");
        if (/role:slave/.test(info)) return /master_link_status:up/.test(info);
        const id = (await r.cluster("MYID")) as string;
        return ((await r.cluster("REPLICAS", id)) as string[]).length > 0;
      });
      if (ready.every(Boolean)) break;
      if (i === 300) throw new Error("the replicas did not join their primaries in 30 s");
      await delay(100);
    }
    const roles = await ask(cluster, (r) => r.info("replication"));
    const primaryOf = cluster.nodes.map((n, i) => {
      const info = roles[i] as string;
      return /role:slave/.test(info) ? Number(/master_port:(\d+)/.exec(info)?.[1]) : n.port;
    });
    const before = await counts(cluster);
    await offers(store, `shard-${Date.now()}`, 16, 600);
    // The messages reach the replicas over the bus a moment later: read until each
    // replica has as many as its primary published, for 3 s at most.
    let during = less(await counts(cluster), before);
    for (let i = 0; i < 30; i++) {
      const published = (port: number) =>
        during[cluster.nodes.findIndex((n) => n.port === port)]?.spublishes ?? 0;
      const caughtUp = cluster.nodes.every(
        (n, j) =>
          primaryOf[j] === n.port || during[j]?.busPublishes === published(primaryOf[j] as number),
      );
      if (caughtUp) break;
      await delay(100);
      during = less(await counts(cluster), before);
    }
    redis.disconnect();
    return cluster.nodes.map((n, i) => {
      const replica = primaryOf[i] !== n.port;
      const c = during[i] as NodeCounts;
      return {
        role: replica ? "replica" : "primary",
        shardPort: primaryOf[i] as number,
        port: n.port,
        spublishes: c.spublishes,
        busPublishes: c.busPublishes,
      };
    });
  } finally {
    await cluster.stop();
  }
}

/** Everything the measurement found, with its line for the bench's report. */
export interface ClusterNoticesResult {
  readonly measure: string;
  readonly figure: string;
  /** The figure's parts, one a line. */
  readonly lines: readonly string[];
  /** 9 primaries ÷ 3 at the same load per primary, 64 and 192 (median of the rounds). */
  readonly ratio: number;
  /** 9 primaries ÷ 3 at 64 in flight on both (median of the rounds). */
  readonly sameInFlightRatio: number;
  readonly pairings: readonly PairingResult[];
  readonly runs: readonly NoticesRun[];
  readonly shard: readonly ShardNode[];
}

type Pairing = (typeof PAIRINGS)[number];

/** One pairing's figures. */
export interface PairingResult {
  readonly name: string;
  readonly three: number;
  readonly nine: number;
  /** 9 primaries ÷ 3, the median of the rounds' ratios. */
  readonly ratio: number;
  readonly rounds: readonly number[];
}

const us = (x: number) => `${Math.round(x)} µs`;
const range = (xs: readonly number[]) =>
  Math.min(...xs) === Math.max(...xs)
    ? String(Math.min(...xs))
    : `${Math.min(...xs)} to ${Math.max(...xs)}`;

function sumByNode(runs: readonly NoticesRun[], key: "busPublishes" | "spublishes"): number[] {
  const total: number[] = [];
  for (const r of runs) {
    for (const [i, v] of r[key].entries()) total[i] = (total[i] ?? 0) + v;
  }
  return total;
}

/** The figures of the runs of `primaries` at `inFlight`, in words. */
function summaryOf(runs: readonly NoticesRun[], primaries: number, inFlight: number) {
  const mine = runs.filter((r) => r.primaries === primaries && r.inFlight === inFlight);
  const cpu = mine.map((r) => r.cpuUsPerOffer);
  return {
    median: median(cpu),
    text: `${us(median(cpu))} (${mine.map((r) => Math.round(r.cpuUsPerOffer)).join(", ")}; ${median(mine.map((r) => r.offersPerRead)).toFixed(1)} offers a read, ${Math.round(median(mine.map((r) => r.offersPerSecond))).toLocaleString("en-US")}/s, idle ${median(mine.map((r) => r.idleCores)).toFixed(3)} core)`,
  };
}

/** Ratios of 9 to 3 primaries per round, in one pairing. */
function roundRatios(runs: readonly NoticesRun[], pairing: Pairing): number[] {
  const three = runs.filter((r) => r.primaries === 3 && r.inFlight === pairing.three);
  const nine = runs.filter((r) => r.primaries === 9 && r.inFlight === pairing.nine);
  return three.map((t, i) => (nine[i]?.cpuUsPerOffer ?? Number.NaN) / t.cpuUsPerOffer);
}

function shardText(shard: readonly ShardNode[]): string {
  const primaries = shard.filter((n) => n.role === "primary");
  const parts = primaries.map((p, i) => {
    const replica = shard.find((n) => n.role === "replica" && n.shardPort === p.port);
    return `shard ${i + 1}: primary ${p.spublishes} SPUBLISH, its replica received ${replica?.busPublishes ?? "?"}`;
  });
  const elsewhere = primaries.map((p) => p.busPublishes);
  return `on 3 primaries + 3 replicas, ${parts.join("; ")}; the primaries received ${range(elsewhere)}`;
}

/** Runs the whole measurement (about 3 minutes on 2 cores). */
export async function measureClusterNotices(
  log: (line: string) => void = console.error,
): Promise<ClusterNoticesResult> {
  const clusters = new Map<number, LocalRedisCluster>();
  const stores = new Map<number, SuggestionStore>();
  const runs: NoticesRun[] = [];
  try {
    for (const primaries of [3, 9]) {
      const cluster = await startRedisCluster({ primaries });
      clusters.set(primaries, cluster);
      const redis = createRedisClient(cluster.url);
      await redis.ping();
      stores.set(primaries, new SuggestionStore(redis));
    }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [3, 9] : [9, 3];
      for (const primaries of order) {
        const cluster = clusters.get(primaries) as LocalRedisCluster;
        const store = stores.get(primaries) as SuggestionStore;
        const loads = PAIRINGS.map((p) => (primaries === 3 ? p.three : p.nine));
        for (const inFlight of new Set(loads)) {
          const run = await measure(cluster, store, primaries, inFlight);
          log(
            `cluster notices: round ${round + 1}, ${primaries} primaries, ${inFlight} in flight: ${us(run.cpuUsPerOffer)} an offer, ${run.offersPerRead.toFixed(1)} offers a read`,
          );
          runs.push(run);
        }
      }
    }
  } finally {
    for (const store of stores.values()) store.redis.disconnect();
    for (const cluster of clusters.values()) await cluster.stop();
  }
  const shard = await shardCheck();
  const pairings: PairingResult[] = PAIRINGS.map((p) => {
    const rounds = roundRatios(runs, p);
    return { name: p.name, three: p.three, nine: p.nine, ratio: median(rounds), rounds };
  });
  const [fair, , same] = pairings as [PairingResult, PairingResult, PairingResult];
  const nineRuns = runs.filter((r) => r.primaries === 9);
  const threeRuns = runs.filter((r) => r.primaries === 3);
  const lines = [
    `Redis CPU per offer, all nodes, median of ${ROUNDS} rounds of ${OFFERS.toLocaleString("en-US")} offers`,
    ...pairings.map(
      (p) =>
        `${p.name}: 3 primaries at ${p.three} in flight ${summaryOf(runs, 3, p.three).text}, 9 at ${p.nine} ${summaryOf(runs, 9, p.nine).text}: ${p.ratio.toFixed(2)}× (rounds ${p.rounds.map((r) => r.toFixed(2)).join(", ")})`,
    ),
    `SPUBLISH calls per node over the rounds: 3 primaries ${range(sumByNode(threeRuns, "spublishes"))}, 9 primaries ${range(sumByNode(nineRuns, "spublishes"))}; publish messages each node received over the cluster bus: ${range(sumByNode(threeRuns, "busPublishes"))} on 3, ${range(sumByNode(nineRuns, "busPublishes"))} on 9`,
    shardText(shard),
  ];
  return {
    measure:
      "change notices as the cluster grows: Redis CPU per offer, 9 primaries ÷ 3 at the same load per primary (`BENCH_CLUSTER=1`, bench/cluster-notices.ts)",
    figure: lines.join("; "),
    lines,
    ratio: fair.ratio,
    sameInFlightRatio: same.ratio,
    pairings,
    runs,
    shard,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const result = await measureClusterNotices();
  console.log([result.measure, ...result.lines].join("\n"));
  for (const p of result.pairings) {
    console.log(`9 primaries ÷ 3, ${p.name} (${p.three} and ${p.nine}): ${p.ratio.toFixed(2)}×`);
  }
}
