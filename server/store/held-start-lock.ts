import type { Cluster, Redis } from "ioredis";
import { startLockKey, startResultChannel } from "./keys.js";
import { runScript } from "./run-script.js";
import {
  type StartLockSettings,
  type StartResult,
  startResultMessage,
} from "./start-lock-protocol.js";

/**
 * A held lock: renewed every third of its lifetime with a compare-and-PEXPIRE
 * (lua/extendLock-1.lua) for at most `maxHoldMs`, and released only by its holder with a
 * compare-and-DEL (includes/locks.lua, run by lua/releaseLock-2.lua and, in the same step
 * as Start's `started`, by lua/settleStart-5.lua), which also tells the waiters the result.
 */
export class HeldStartLock {
  readonly #redis: Redis | Cluster;
  readonly #key: string;
  readonly #channel: string;
  readonly #suggestionId: string;
  readonly #token: string;
  readonly #timer: NodeJS.Timeout;
  #lost = false;
  #done = false;

  /** @internal made by `StartLocks` (`take`, `held`) once `SET NX PX` succeeded. */
  constructor(
    redis: Redis | Cluster,
    sessionId: string,
    suggestionId: string,
    token: string,
    settings: StartLockSettings,
  ) {
    this.#redis = redis;
    this.#key = startLockKey(sessionId, suggestionId);
    this.#channel = startResultChannel(sessionId);
    this.#suggestionId = suggestionId;
    this.#token = token;
    const takenAt = Date.now();
    this.#timer = setInterval(
      () => {
        if (Date.now() - takenAt >= settings.maxHoldMs) {
          clearInterval(this.#timer);
          return;
        }
        runScript(this.#redis, "extendLock", this.#key, this.#token, String(settings.ttlMs)).then(
          (extended) => {
            if (extended === 1) return;
            this.#lost = true;
            clearInterval(this.#timer);
          },
          () => {
            // Redis did not answer: the next tick tries again, or the lock lapses.
          },
        );
      },
      Math.max(10, Math.floor(settings.ttlMs / 3)),
    );
    this.#timer.unref();
  }

  /** True once a renewal found the lock expired or taken by another caller. */
  get lost(): boolean {
    return this.#lost;
  }

  /** The holder's token, for a script that ends the lock in the same step as its own work. */
  get token(): string {
    return this.#token;
  }

  /** True once the lock was released, here or by such a script (`ended`). */
  get done(): boolean {
    return this.#done;
  }

  /** A script released the lock (lua/settleStart-5.lua): stops renewing it. */
  ended(): void {
    clearInterval(this.#timer);
    this.#done = true;
  }

  /**
   * Stops renewing, deletes the lock if this caller still holds it, and tells waiters
   * the result. Answers whether the lock was still held.
   */
  async release(result: StartResult): Promise<boolean> {
    this.ended();
    const held = await runScript(
      this.#redis,
      "releaseLock",
      this.#key,
      this.#channel,
      this.#token,
      startResultMessage(this.#suggestionId, result),
    );
    return held === 1;
  }
}
