import { EventEmitter } from "node:events";
import type { Redis } from "ioredis";
import { isSentinelClient } from "./redis-sentinel.js";
import { storeCondition } from "./store-condition.js";
import { watchSwitches } from "./switch-watch.js";

/** How often the probe asks Redis. */
export const PROBE_EVERY_MS = 250;
/** How long a PING of the probe may go unanswered before its connection is dropped. */
export const PROBE_TIMEOUT_MS = 750;
/** How long without an answered PING before Redis counts as not answering. */
export const DOWN_AFTER_MS = 2_000;

/** The problem a store condition holds while no Redis answers (readiness NOT_SERVING). */
export const UNANSWERED = "Redis does not answer";

/** What an answer watch tells. */
export interface AnswerWatchEvents {
  /** Redis stopped answering (`true`) or answers again (`false`). */
  down: [boolean];
  /** A connection was closed so that it is made again; why. */
  recycled: [string];
  /** An error of the probe's own connection (not `error`: nobody need listen). */
  probeError: [Error];
}

/**
 * Whether a standalone Redis answers, asked on a connection of its own, and what follows
 * from that for the client's connections. ioredis notices a connection that fails, not
 * one that hangs: when the server behind an unchanged address is replaced (a managed
 * service's endpoint moved to the promoted replica) or vanishes without a reset, the
 * connections to the old one stay open and silent, every command on them waits for its
 * 5 s timeout, and a subscriber that has nothing to send never learns that it hears
 * nothing. The probe sends a PING every `PROBE_EVERY_MS`; a PING not answered within
 * `PROBE_TIMEOUT_MS` drops the probe's connection (it is made again at once), and
 * `DOWN_AFTER_MS` without an answer make Redis not answering:
 *
 * - the followed connections (the command client, the subscriber) are closed, the
 *   commands waiting on them failed (UNAVAILABLE: their outcome is unknown, and every
 *   write is idempotent), and made again, so that nothing waits on a silent socket;
 *   while Redis does not answer, the client queues no command (each fails at once,
 *   UNAVAILABLE) and the store condition holds `unanswered` (readiness NOT_SERVING,
 *   rpc/readiness.ts);
 * - at the first PING answered again, the followed connections are closed and made
 *   again once more (to the server that answers now: the ones made meanwhile may hang on
 *   the old one), commands queue again until they are ready, and the problem is gone.
 *   The subscriber subscribes again and its watchers read the log again
 *   (store/pubsub.ts), so no change made meanwhile is missed.
 *
 * Through Sentinel, the followed connections and the probe are also made again each
 * time a sentinel announces a new primary (redis/switch-watch.ts), to the one it names.
 * A cluster is not watched this way: its client finds the promoted replica itself.
 * Pinned by test/e2e/redis-swap.test.ts and test/e2e/sentinel-failover.test.ts.
 */
export class AnswerWatch extends EventEmitter<AnswerWatchEvents> {
  readonly #client: Redis;
  readonly #probe: Redis;
  readonly #followed = new Set<Redis>();
  #timer: NodeJS.Timeout | undefined;
  #lastAnswer = Date.now();
  #down = false;
  #stopped = false;
  readonly #stopSwitches: () => void;

  /** @param client the command client; its duplicate is the probe, and it is followed. */
  constructor(client: Redis) {
    super();
    this.#client = client;
    // As a subscriber's (redis-client.ts `SUBSCRIBER_OPTIONS`): no ready check, no
    // client name, so that a connection dropped at once is never taken for ready.
    this.#probe = client.duplicate({
      enableOfflineQueue: false,
      enableReadyCheck: false,
      disableClientInfo: true,
      maxRetriesPerRequest: 0,
      commandTimeout: PROBE_TIMEOUT_MS,
      retryStrategy: () => 100,
    });
    this.#probe.on("error", (err: Error) => this.emit("probeError", err));
    this.#followed.add(client);
    this.#stopSwitches = isSentinelClient(client)
      ? watchSwitches(client, () => this.#switched())
      : () => {};
    this.#schedule(0);
  }

  /** Whether Redis counts as not answering now. */
  get down(): boolean {
    return this.#down;
  }

  /** Closes and makes again `connection` too whenever Redis stops or starts answering. */
  follow(connection: Redis): void {
    this.#followed.add(connection);
  }

  /** Stops the probe and closes its connection. */
  stop(): void {
    this.#stopped = true;
    this.#stopSwitches();
    clearTimeout(this.#timer);
    this.#probe.disconnect();
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#ask(), ms).unref();
  }

  async #ask(): Promise<void> {
    // A probe still connecting is not asked: a PING would fail at once, not tell.
    if (this.#probe.status === "ready") {
      const answered = await this.#probe.ping().then(
        () => true,
        () => false,
      );
      if (this.#stopped) return;
      if (answered) {
        this.#lastAnswer = Date.now();
        if (this.#down) this.#turn(false);
      } else if (this.#probe.status === "ready") {
        // A silent connection is left: the next PING goes on a new one.
        this.#probe.disconnect(true);
      }
    }
    if (!this.#down && Date.now() - this.#lastAnswer > DOWN_AFTER_MS) this.#turn(true);
    this.#schedule(PROBE_EVERY_MS);
  }

  /**
   * Makes `connection` again should the recycling end it: a client of the sentinels
   * closed while it asks them for the primary ends for good instead of connecting again
   * (ioredis 5), and its calls would fail UNAVAILABLE until a restart.
   */
  #madeAgainIfEnded(connection: Redis): void {
    const onEnd = () => {
      connection.off("ready", onReady);
      if (!this.#stopped) connection.connect().catch(() => {});
    };
    const onReady = () => connection.off("end", onEnd);
    connection.once("end", onEnd);
    connection.once("ready", onReady);
  }

  /** The sentinels named a new primary: every connection is made again, to it. */
  #switched(): void {
    for (const connection of [...this.#followed, this.#probe]) {
      if (connection.status === "end" || connection.status === "wait") continue;
      this.emit("recycled", "the sentinels named a new primary");
      this.#madeAgainIfEnded(connection);
      connection.disconnect(true);
    }
  }

  #turn(down: boolean): void {
    this.#down = down;
    // No queue while Redis does not answer: calls fail at once instead of waiting.
    this.#client.options.enableOfflineQueue = !down;
    storeCondition(this.#client).set("unanswered", down ? UNANSWERED : undefined);
    this.emit("down", down);
    const why = down ? "Redis does not answer" : "Redis answers again";
    for (const connection of this.#followed) {
      if (!down) {
        if (connection.status === "end" || connection.status === "wait") continue;
        this.emit("recycled", why);
        this.#madeAgainIfEnded(connection);
        connection.disconnect(true);
        continue;
      }
      // Only an open socket can hang; one being made again already fails its commands.
      if (connection.status !== "ready" && connection.status !== "connect") continue;
      this.emit("recycled", why);
      // Closed for a moment, so that what waits on it fails now, then made again.
      connection.once("end", () => {
        if (!this.#stopped) connection.connect().catch(() => {});
      });
      connection.disconnect();
    }
  }
}
