import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Cluster, Redis } from "ioredis";
import { HeldStartLock } from "./held-start-lock.js";
import { startLockKey, startResultChannel } from "./keys.js";
import type { ChannelListener, PubSub } from "./pubsub.js";
import {
  defaultStartLockSettings,
  parseStartResult,
  type StartLockSettings,
  type StartResult,
} from "./start-lock-protocol.js";

/**
 * What a caller got when it asked for the lock: the lock itself, the holder's result,
 * or `lapsed` when it waited until the lock could have expired without hearing from the
 * holder (it died, or its message was lost) and should check again.
 */
export type LockTurn =
  | { readonly kind: "held"; readonly lock: HeldStartLock }
  | { readonly kind: StartResult | "lapsed" };

/**
 * A holder's random token (122 random bits): only the caller that set it may renew or
 * release the lock. `randomUUID` draws from a buffered pool, not one draw per token.
 */
export function newLockToken(): string {
  return randomUUID();
}

/** Waiting beyond the lock's expiry by this much lets the holder's message arrive first. */
const EXPIRY_SLACK_MS = 25;

/** One caller waiting for the result of one suggestion's Start. */
class Inbox implements ChannelListener {
  #result: StartResult | "lapsed" | undefined;
  #wake: (() => void) | undefined;

  constructor(readonly suggestionId: string) {}

  /** Takes a message of the session's channel; others' suggestions are ignored. */
  message(message: string): void {
    const heard = parseStartResult(message);
    if (heard?.suggestionId === this.suggestionId) this.#settle(heard.result);
  }

  /** The subscription was lost for a while: messages may be missing, so check again. */
  resync(): void {
    this.resynced = true;
    this.#settle("lapsed");
  }

  /** True once the subscription was lost while waiting (not a lapse of the lock). */
  resynced = false;

  #settle(result: StartResult | "lapsed"): void {
    this.#result ??= result;
    this.#wake?.();
  }

  /** The first result heard, or `lapsed` after `ms`; rejects when `signal` aborts. */
  async next(ms: number, signal: AbortSignal | undefined): Promise<StartResult | "lapsed"> {
    if (this.#result === undefined && ms > 0) {
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", abort);
          this.#wake = undefined;
        };
        const abort = () => {
          done();
          reject(
            signal?.reason instanceof Error
              ? signal.reason
              : new ConnectError("the call was cancelled", Code.Canceled),
          );
        };
        const timer = setTimeout(() => {
          done();
          resolve();
        }, ms);
        this.#wake = () => {
          done();
          resolve();
        };
        signal?.addEventListener("abort", abort);
        if (signal?.aborted) abort();
      });
    }
    return this.#result ?? "lapsed";
  }
}

/**
 * The single-flight locks of StartSuggestion on one server instance: a `SET NX PX` lock
 * per (session, suggestion) with a random token, and one Redis subscriber connection
 * through which callers that find a lock taken hear the holder's result, instead of
 * polling. A caller that finds the lock taken subscribes and then tries it once more,
 * so no result can slip between the two (an uncontended Start subscribes to nothing); when it hears nothing it wakes once the lock could have expired (the holder
 * died) and checks again. Pinned by test/store/start-lock.test.ts and
 * test/rpc/start-concurrency.test.ts.
 */
export class StartLocks {
  readonly settings: Readonly<StartLockSettings>;
  readonly #redis: Redis | Cluster;
  readonly #pubsub: PubSub;
  readonly #onLapse: () => void;

  /**
   * @param redis takes, renews and releases locks.
   * @param pubsub the instance's subscriber, shared with the watch hub.
   * @param settings beyond the defaults (start-lock-protocol.ts).
   * @param onLapse called each time a waiter waited out another holder's lock without
   *   hearing its result (the holder died or stalled), so the instance can count them.
   */
  constructor(
    redis: Redis | Cluster,
    pubsub: PubSub,
    settings: Partial<StartLockSettings> = {},
    onLapse: () => void = () => {},
  ) {
    this.#redis = redis;
    this.#pubsub = pubsub;
    this.settings = Object.freeze({ ...defaultStartLockSettings, ...settings });
    this.#onLapse = onLapse;
  }

  /**
   * How long a caller keeps waiting for other holders before it gives up: one holder's
   * longest hold (`maxHoldMs`, then the last renewal's lifetime) and one more lifetime.
   */
  get maxWaitMs(): number {
    return this.settings.maxHoldMs + 2 * this.settings.ttlMs + 1_000;
  }

  /**
   * The lock of (session, suggestion) as its holder keeps it, once taken with `token`
   * (here, or by a script that took it in the same step as another read: lua/beginStart-4.lua).
   */
  held(sessionId: string, suggestionId: string, token: string): HeldStartLock {
    return new HeldStartLock(this.#redis, sessionId, suggestionId, token, this.settings);
  }

  /**
   * Takes the lock of (session, suggestion), or, when another caller holds it, waits
   * for its result, at most until the lock could have expired and never past `until`
   * (ms since the epoch) or the abort of `signal`.
   */
  async take(
    sessionId: string,
    suggestionId: string,
    options: { readonly until: number; readonly signal?: AbortSignal | undefined },
  ): Promise<LockTurn> {
    const channel = startResultChannel(sessionId);
    const key = startLockKey(sessionId, suggestionId);
    const token = newLockToken();
    const tryLock = async (): Promise<LockTurn | undefined> => {
      const taken = await this.#redis.set(key, token, "PX", this.settings.ttlMs, "NX");
      if (taken !== "OK") return undefined;
      return { kind: "held", lock: this.held(sessionId, suggestionId, token) };
    };
    // Uncontended (the usual case): the lock at once, with no subscription at all.
    const first = await tryLock();
    if (first !== undefined) return first;
    const inbox = new Inbox(suggestionId);
    // Subscribed, then the lock tried again, so no result can slip between the two.
    await this.#pubsub.listen(channel, inbox);
    try {
      const again = await tryLock();
      if (again !== undefined) return again;
      const pttl = await this.#redis.pttl(key);
      // -2: already gone, check again at once; -1 (no expiry; never set so): one lifetime.
      const expiresIn = pttl === -2 ? 0 : pttl < 0 ? this.settings.ttlMs : pttl + EXPIRY_SLACK_MS;
      const waitMs = Math.min(expiresIn, options.until - Date.now());
      const kind = await inbox.next(waitMs, options.signal);
      // Waited out the holder's whole lifetime and heard nothing: the lock lapsed.
      if (kind === "lapsed" && waitMs > 0 && waitMs === expiresIn && !inbox.resynced) {
        this.#onLapse();
      }
      return { kind };
    } finally {
      this.#pubsub.unlisten(channel, inbox);
    }
  }
}
