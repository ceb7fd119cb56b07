import { type RedisClient, turnsOf } from "../redis/redis-client.js";
import { storeCondition } from "../redis/store-condition.js";
import { TurnCommand } from "../redis/turn-waits.js";

/** The one-line reasons `/readyz` and health give for not being ready. */
export const NOT_READY = Object.freeze({
  draining: "the server is shutting down",
  redis: "Redis does not answer",
});

/** The Redis client's events that change its `status`. */
const REDIS_EVENTS = ["ready", "close", "end", "reconnecting", "error"] as const;

/**
 * Whether this instance should be sent calls: Redis answers, its condition has no
 * problem (an evicting policy, a disk that refuses writes) and no drain has begun
 * (docs/operating.md, "Shutdown" and "Behind a proxy"). Liveness is not this: a Redis outage makes every
 * instance not ready, never not live (`GET /livez` answers while the event loop does).
 * Read by `GET /readyz` and grpc.health.v1 (rpc/health.ts), both for the empty service
 * name and oda.suggest.v1.SuggestionService. Pinned by test/e2e/probes.test.ts.
 */
export class Readiness {
  readonly #redis: RedisClient;
  readonly #pingTimeoutMs: number;
  readonly #listeners = new Set<() => void>();
  #draining = false;

  constructor(redis: RedisClient, pingTimeoutMs = 1_000) {
    this.#redis = redis;
    this.#pingTimeoutMs = pingTimeoutMs;
  }

  /** A drain has begun (SIGTERM): not ready from now on. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Turns not ready for good, at once; listeners are told. */
  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#tell();
  }

  /**
   * Calls `listener` when `current()` may have changed: the drain begins, or the Redis
   * connection's state changes. Answers what drops it. However many listen (each open
   * health Watch does), the Redis client and the store's condition carry one listener
   * of this instance's, there while anyone listens and taken off when the last one
   * leaves: shared emitters do not grow with the watchers.
   */
  onChange(listener: () => void): () => void {
    if (this.#listeners.size === 0) this.#follow(true);
    this.#listeners.add(listener);
    return () => {
      if (this.#listeners.delete(listener) && this.#listeners.size === 0) this.#follow(false);
    };
  }

  /** Tells every listener that `current()` may have changed. */
  readonly #tell = () => {
    for (const listener of [...this.#listeners]) listener();
  };

  /** Puts this instance's one listener on Redis and the store's condition, or takes it off. */
  #follow(on: boolean): void {
    const redis = this.#redis;
    const condition = storeCondition(redis);
    for (const e of REDIS_EVENTS) {
      if (on) redis.on(e, this.#tell);
      else redis.off(e, this.#tell);
    }
    if (on) condition.on("change", this.#tell);
    else condition.off("change", this.#tell);
  }

  /** Why it is not ready now, from what is known without asking Redis; undefined: ready. */
  current(): string | undefined {
    if (this.#draining) return NOT_READY.draining;
    if (this.#redis.status !== "ready") return NOT_READY.redis;
    return this.#problem();
  }

  /** Why it is not ready, Redis asked (a PING within the timeout); undefined: ready. */
  async check(): Promise<string | undefined> {
    if (this.#draining) return NOT_READY.draining;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.#pingTimeoutMs);
    });
    // With the turn's other commands (redis/turn-waits.ts): a load balancer's checks and
    // the calls of the same turn leave in one write. A PING written alone each time made
    // grpc.health.v1 Check cost about a quarter more server CPU (measured under h2load).
    const ping = new TurnCommand(turnsOf(this.#redis), "ping", []);
    const answered = (this.#redis.sendCommand(ping) as Promise<unknown>).then(
      () => true,
      () => false,
    );
    const ok = await Promise.race([answered, timeout]).finally(() => clearTimeout(timer));
    if (this.#draining) return NOT_READY.draining;
    return ok ? this.#problem() : NOT_READY.redis;
  }

  /** The store's first problem while Redis answers (redis/store-condition.ts), if any. */
  #problem(): string | undefined {
    for (const description of storeCondition(this.#redis).problems.values()) return description;
    return undefined;
  }
}
