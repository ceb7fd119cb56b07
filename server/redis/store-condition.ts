import { EventEmitter } from "node:events";
import type { Cluster, Redis } from "ioredis";
import type { RedisClient } from "./redis-client.js";

/**
 * A write that Redis took but that fewer replicas than asked confirmed in time. The
 * write may still exist (and reach the replicas later): every write of the service is
 * idempotent (by tool_call_id, suggestion id, idempotency key), so a retry is harmless.
 */
export class WriteNotConfirmedError extends Error {
  override name = "WriteNotConfirmedError";
  constructor(
    readonly replicas: number,
    /** How many did confirm; -1 when the confirmation itself was lost (connection closed). */
    readonly confirmed: number,
  ) {
    super(`the write was not confirmed by ${replicas} replicas`);
  }
}

/** Why Redis refused a write while it answered: the three the service tells apart. */
export type StoreRefusal =
  /** `OOM`: at `maxmemory` with `noeviction`; the script was refused whole. */
  | { readonly kind: "out-of-memory" }
  /** `MISCONF` (and AOF write errors): its disk refuses the AOF or a snapshot. */
  | { readonly kind: "disk"; readonly cause: string }
  /** Fewer replicas than `REDIS_WAIT_REPLICAS` confirmed the write in time. */
  | { readonly kind: "unconfirmed"; readonly replicas: number };

/**
 * What a Redis failure says, when it is a refusal rather than Redis being down: an
 * `OOM` or `MISCONF` reply (also as a MULTI's `EXECABORT` cause), or a write not
 * confirmed by replicas. Undefined for anything else.
 */
export function storeRefusal(err: unknown): StoreRefusal | undefined {
  if (err instanceof WriteNotConfirmedError) return { kind: "unconfirmed", replicas: err.replicas };
  if (!(err instanceof Error)) return undefined;
  const message = err.message;
  if (message.startsWith("OOM ")) return { kind: "out-of-memory" };
  if (message.startsWith("MISCONF ")) {
    return { kind: "disk", cause: message.slice("MISCONF ".length).trim() };
  }
  const previous = (err as { previousErrors?: unknown[] }).previousErrors;
  if (message.startsWith("EXECABORT") && Array.isArray(previous)) {
    for (const cause of previous) {
      const refusal = storeRefusal(cause);
      if (refusal !== undefined) return refusal;
    }
  }
  return undefined;
}

/** What ioredis says when a command got no answer: the connection, not Redis, failed. */
const CONNECTION_FAILURES: readonly RegExp[] = [
  /^Connection is closed\.$/,
  /^Command timed out$/,
  /^Stream isn't writeable/,
  /^Ready check failed/,
  /^Reached the max retries per request limit/,
  /^Command aborted due to connection close$/,
];

/**
 * Whether `err` is a Redis client's failure: no answer (a connection closed, hanging or
 * being made again), Redis's own error reply, or a write its replicas did not confirm
 * (as while a promoted replica's own replicas catch up). Whichever call it came through
 * (the embedded chat host keeps its chats in the same Redis), it is the suggestion
 * store that failed (rpc/errors.ts `dependencyError`); a watch rides it out
 * (store/watch-hub.ts).
 */
export function isRedisFailure(err: unknown): boolean {
  if (err instanceof WriteNotConfirmedError) return true;
  if (!(err instanceof Error)) return false;
  if (err.name === "ReplyError" || err.name === "MaxRetriesPerRequestError") return true;
  return CONNECTION_FAILURES.some((failure) => failure.test(err.message));
}

/**
 * The conditions of one client's Redis that make the service not ready while Redis still
 * answers: an evicting `maxmemory-policy` found on a reconnection (store-checks.ts `watchEvictionPolicy`), a
 * disk that refuses writes (`MISCONF`). Emits `change` when one comes or goes, and
 * `refused` with a `StoreRefusal` for each write refused (telemetry counts them).
 * grpc.health.v1 (rpc/health.ts) reports NOT_SERVING while `problems` is not empty.
 */
export class StoreCondition extends EventEmitter {
  readonly #problems = new Map<string, string>();
  #diskTimer: NodeJS.Timeout | undefined;

  constructor(private readonly client: RedisClient) {
    super();
  }

  /** Each problem's description, by name (`eviction`, `disk`). */
  get problems(): ReadonlyMap<string, string> {
    return this.#problems;
  }

  /** Records (or, with undefined, clears) a problem; emits `change` when that changes. */
  set(name: string, description: string | undefined): void {
    const before = this.#problems.get(name);
    if (description === undefined) this.#problems.delete(name);
    else this.#problems.set(name, description);
    if (before !== description) this.emit("change");
  }

  /**
   * Notes a failed write: a refusal is told as `refused`; a disk refusal makes a problem
   * that lasts until every primary reports its AOF and snapshot writes as ok again
   * (checked every second).
   */
  failed(err: unknown): void {
    const refusal = storeRefusal(err);
    if (refusal === undefined) return;
    this.emit("refused", refusal);
    if (refusal.kind === "disk") this.diskRefuses(refusal.cause);
  }

  /** Makes the disk's problem, until every primary reports its writes ok again. */
  diskRefuses(cause: string): void {
    this.set("disk", `Redis refuses writes: ${cause}`);
    this.#diskTimer ??= setInterval(() => void this.#checkDisk(), 1_000).unref();
  }

  /** Stops the disk's checks. */
  close(): void {
    clearInterval(this.#diskTimer);
    this.#diskTimer = undefined;
  }

  async #checkDisk(): Promise<void> {
    try {
      const nodes: Redis[] = this.client.isCluster
        ? (this.client as Cluster).nodes("master")
        : [this.client as Redis];
      const infos = await Promise.all(nodes.map((node) => node.info("persistence")));
      const ok = infos.every(
        (info) =>
          !/^aof_last_write_status:err/m.test(info) && !/^rdb_last_bgsave_status:err/m.test(info),
      );
      if (!ok) return;
      this.close();
      this.set("disk", undefined);
    } catch {
      // Redis not answering: the connection's own state already says so.
    }
  }
}

const conditions = new WeakMap<RedisClient, StoreCondition>();

/** The condition of `client`'s Redis, made on first use. */
export function storeCondition(client: RedisClient): StoreCondition {
  let condition = conditions.get(client);
  if (condition === undefined) {
    condition = new StoreCondition(client);
    conditions.set(client, condition);
  }
  return condition;
}
