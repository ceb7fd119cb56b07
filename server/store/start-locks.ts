import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Cluster, Redis } from "ioredis";
import { subscriberConnection } from "../redis/redis-client.js";
import { HeldStartLock } from "./held-start-lock.js";
import { startLockKey, startResultChannel } from "./keys.js";

/** How a Start's single-flight lock behaves. */
export interface StartLockSettings {
  /** The lock's lifetime in ms; its holder renews it every third of that. */
  readonly ttlMs: number;
  /**
   * The longest a holder keeps renewing, in ms. A holder stuck longer (a host that hangs,
   * a paused process) lets the lock lapse so that another caller can finish the Start;
   * the downstream calls are idempotent, so both still make one chat with one brief
   * (test/rpc/start-stall.test.ts).
   */
  readonly maxHoldMs: number;
}

/** The defaults, frozen. */
export const defaultStartLockSettings: Readonly<StartLockSettings> = Object.freeze({
  // Short, so that a holder that dies stops blocking the others within about 1.5 s; its
  // renewals every 500 ms leave room for two lost ones (test/e2e/start-crash.test.ts).
  ttlMs: 1_500,
  maxHoldMs: 60_000,
});

/**
 * How a holder's Start ended, as it tells the callers waiting for it: `delivered` (the
 * suggestion is started and its brief posted) or `released` (it stopped without that:
 * the suggestion was no longer open, or a call failed), so a waiter checks again.
 */
export type StartResult = "delivered" | "released";

/**
 * What a caller got when it asked for the lock: the lock itself, the holder's result,
 * or `lapsed` when it waited until the lock could have expired without hearing from the
 * holder (it died, or its message was lost) and should check again.
 */
export type LockTurn =
  | { readonly kind: "held"; readonly lock: HeldStartLock }
  | { readonly kind: StartResult | "lapsed" };

/** Waiting beyond the lock's expiry by this much lets the holder's message arrive first. */
const EXPIRY_SLACK_MS = 25;

/** One caller waiting for the result of one suggestion's Start. */
class Inbox {
  #result: StartResult | "lapsed" | undefined;
  #wake: (() => void) | undefined;

  constructor(readonly suggestionId: string) {}

  /** Takes a message of the session's channel; others' suggestions are ignored. */
  deliver(message: string): void {
    const space = message.lastIndexOf(" ");
    if (message.slice(0, space) !== this.suggestionId) return;
    const result = message.slice(space + 1);
    if (result === "delivered" || result === "released") this.#settle(result);
  }

  /** The subscription was lost for a while: messages may be missing, so check again. */
  recheck(): void {
    this.#settle("lapsed");
  }

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
 * polling. A caller subscribes before it tries the lock, so no result can slip between
 * the two; when it hears nothing it wakes once the lock could have expired (the holder
 * died) and checks again. Pinned by test/store/start-lock.test.ts and
 * test/rpc/start-concurrency.test.ts.
 */
export class StartLocks {
  readonly settings: Readonly<StartLockSettings>;
  readonly #redis: Redis | Cluster;
  readonly #connect: () => Redis | Cluster;
  readonly #inboxes = new Map<string, Set<Inbox>>();
  readonly #subscriptions = new Map<string, Promise<unknown>>();
  #subscriber: Redis | Cluster | undefined;

  /**
   * @param redis takes, renews and releases locks.
   * @param connect makes the subscriber connection, opened at the first wait.
   */
  constructor(
    redis: Redis | Cluster,
    settings: Partial<StartLockSettings> = {},
    connect: () => Redis | Cluster = () => subscriberConnection(redis),
  ) {
    this.#redis = redis;
    this.#connect = connect;
    this.settings = Object.freeze({ ...defaultStartLockSettings, ...settings });
  }

  /**
   * How long a caller keeps waiting for other holders before it gives up: one holder's
   * longest hold (`maxHoldMs`, then the last renewal's lifetime) and one more lifetime.
   */
  get maxWaitMs(): number {
    return this.settings.maxHoldMs + 2 * this.settings.ttlMs + 1_000;
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
    const inbox = new Inbox(suggestionId);
    await this.#listen(channel, inbox);
    try {
      const token = randomBytes(16).toString("hex");
      const taken = await this.#redis.set(key, token, "PX", this.settings.ttlMs, "NX");
      if (taken === "OK") {
        return {
          kind: "held",
          lock: new HeldStartLock(this.#redis, sessionId, suggestionId, token, this.settings),
        };
      }
      const pttl = await this.#redis.pttl(key);
      // -2: already gone, check again at once; -1 (no expiry; never set so): one lifetime.
      const expiresIn = pttl === -2 ? 0 : pttl < 0 ? this.settings.ttlMs : pttl + EXPIRY_SLACK_MS;
      return {
        kind: await inbox.next(Math.min(expiresIn, options.until - Date.now()), options.signal),
      };
    } finally {
      this.#unlisten(channel, inbox);
    }
  }

  /** Closes the subscriber connection; callers still waiting wake when their locks lapse. */
  async close(): Promise<void> {
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    this.#subscriptions.clear();
    await subscriber?.quit().catch(() => subscriber.disconnect());
  }

  #subscriberConnection(): Redis | Cluster {
    if (this.#subscriber !== undefined) return this.#subscriber;
    const subscriber = this.#connect();
    let readyBefore = false;
    subscriber.on("error", () => {
      // ioredis reconnects and subscribes again on its own; waiters also have a timer.
    });
    subscriber.on("ready", () => {
      // Messages published while the connection was down are lost: check again.
      if (readyBefore)
        for (const inboxes of this.#inboxes.values()) for (const i of inboxes) i.recheck();
      readyBefore = true;
    });
    subscriber.on("message", (channel: string, message: string) => {
      for (const inbox of this.#inboxes.get(channel) ?? []) inbox.deliver(message);
    });
    this.#subscriber = subscriber;
    return subscriber;
  }

  /** Adds an inbox to a channel, subscribing it first if new; resolves once subscribed. */
  async #listen(channel: string, inbox: Inbox): Promise<void> {
    let inboxes = this.#inboxes.get(channel);
    if (inboxes === undefined) {
      inboxes = new Set();
      this.#inboxes.set(channel, inboxes);
    }
    inboxes.add(inbox);
    let subscribed = this.#subscriptions.get(channel);
    if (subscribed === undefined) {
      subscribed = this.#subscriberConnection().subscribe(channel);
      this.#subscriptions.set(channel, subscribed);
    }
    try {
      await subscribed;
    } catch (err) {
      this.#unlisten(channel, inbox);
      if (this.#subscriptions.get(channel) === subscribed) this.#subscriptions.delete(channel);
      throw err;
    }
  }

  /** Removes an inbox; the last one of a channel unsubscribes it. */
  #unlisten(channel: string, inbox: Inbox): void {
    const inboxes = this.#inboxes.get(channel);
    if (inboxes === undefined || !inboxes.delete(inbox) || inboxes.size > 0) return;
    this.#inboxes.delete(channel);
    if (this.#subscriptions.delete(channel)) {
      this.#subscriber?.unsubscribe(channel).catch(() => {
        // The connection is gone, and with it the subscription.
      });
    }
  }
}

const shared = new WeakMap<object, StartLocks>();

/**
 * The StartLocks of a Redis client with default settings, for handlers built without
 * one (routes made directly in tests); a server makes its own and closes it.
 */
export function startLocksFor(redis: Redis | Cluster): StartLocks {
  let locks = shared.get(redis);
  if (locks === undefined) {
    locks = new StartLocks(redis);
    shared.set(redis, locks);
  }
  return locks;
}
