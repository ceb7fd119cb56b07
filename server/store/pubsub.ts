import type { Cluster, Redis } from "ioredis";

/** What one listener of a channel hears. */
export interface ChannelListener {
  /** A message published on the channel. */
  message(message: string): void;
  /**
   * The channel's subscription was lost for a while (a reconnection, its slot moved to
   * another node, its primary failed over) and is taken again, or being taken again:
   * messages published meanwhile are lost, so the listener reads again what it needs.
   */
  resync(): void;
}

interface Channel {
  readonly listeners: Set<ChannelListener>;
  readonly subscribed: Promise<unknown>;
}

/** The first wait before subscribing again a channel whose subscription failed; doubled up to the most. */
const RESUBSCRIBE_FIRST_MS = 100;
const RESUBSCRIBE_MOST_MS = 2_000;

/**
 * The shard channel a subscriber of a cluster lost, named in the error ioredis reports
 * when a node ends a subscription by itself (its slot left it: Redis sends `sunsubscribe`
 * unasked, which ioredis takes for a reply nobody waits for); undefined for another error.
 */
export function lostShardChannel(err: unknown): string | undefined {
  const text = err instanceof Error ? err.message : String(err);
  const match = /Last reply: sunsubscribe,([^,]*),/.exec(text);
  return match?.[1];
}

/**
 * The instance's subscriptions to shard channels (SSUBSCRIBE; every script tells its
 * changes with SPUBLISH on a channel in the slot of the keys it wrote), shared by
 * everything that listens (the watch hub, the start locks), with channels counted by
 * reference: a channel is subscribed while it has at least one listener and
 * unsubscribed when the last one leaves.
 *
 * On a standalone Redis that is one connection. After every reconnection (Redis restarted,
 * replaced behind the same address, or a silent connection dropped by the answer watch,
 * redis/answer-watch.ts) every channel is subscribed again by this class, not by
 * ioredis (whose own re-subscribe leaves a failure unhandled), retried until it holds,
 * and every listener is then told to resync, after the subscriptions, so no change falls
 * between the two (test/e2e/redis-swap.test.ts).
 *
 * On a cluster, ioredis's sharded subscribers (`shardedSubscribers`) hold one connection
 * per primary that owns a watched channel's slot, and a message stays in its shard. A
 * subscription ends when its slot moves to another primary (the node says
 * `sunsubscribe`), when its primary fails over or its connection is lost: that channel
 * (or, when the node is lost, every channel) is subscribed again, on the slot's primary
 * as the cluster says it now, retried until it holds (a failover: until the replica is
 * promoted; no replica: until the primary is back), and its listeners resync after it.
 * Pinned by test/cluster/cluster-shard-moves.test.ts.
 */
export class PubSub {
  readonly #connect: () => Redis | Cluster;
  readonly #channels = new Map<string, Channel>();
  #subscriber: Redis | Cluster | undefined;
  /** Channels of a cluster to subscribe again, and whether a pass over them is on. */
  readonly #lost = new Set<string>();
  #resubscribing = false;
  /** Ends the wait before the next try at once (the connection is ready again). */
  #wake: (() => void) | undefined;
  readonly #onError: (err: unknown, what: string) => void;

  /**
   * @param connect makes the subscriber connection, opened at the first listener; the
   *   server passes `subscriberConnection(client)` (a duplicate of a standalone Redis, or a
   *   cluster client with sharded subscribers).
   * @param onError told every error of the subscriber and every failed try to subscribe
   *   a channel again (the server logs and counts them); none ends anything.
   */
  constructor(
    connect: () => Redis | Cluster,
    onError: (err: unknown, what: string) => void = () => {},
  ) {
    this.#connect = connect;
    this.#onError = onError;
  }

  /** Channels with at least one listener. */
  get channels(): number {
    return this.#channels.size;
  }

  /**
   * Adds a listener to a channel, subscribing the channel first if it is new. Resolves
   * once the channel is subscribed; rejects, with the listener removed, when it cannot be.
   */
  async listen(channel: string, listener: ChannelListener): Promise<void> {
    let entry = this.#channels.get(channel);
    if (entry === undefined) {
      const subscribed = this.#connection().ssubscribe(channel);
      entry = { listeners: new Set(), subscribed };
      this.#channels.set(channel, entry);
    }
    entry.listeners.add(listener);
    try {
      await entry.subscribed;
    } catch (err) {
      this.unlisten(channel, listener);
      // A later listener tries again rather than waiting on the failed SSUBSCRIBE.
      if (this.#channels.get(channel) === entry) this.#channels.delete(channel);
      throw err;
    }
  }

  /** Removes a listener; the last one of a channel unsubscribes it. */
  unlisten(channel: string, listener: ChannelListener): void {
    const entry = this.#channels.get(channel);
    if (entry === undefined || !entry.listeners.delete(listener) || entry.listeners.size > 0) {
      return;
    }
    this.#channels.delete(channel);
    this.#subscriber?.sunsubscribe(channel).catch(() => {
      // The connection is gone, and with it the subscription.
    });
  }

  /** Closes the connection(s); listeners hear nothing more. */
  async close(): Promise<void> {
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    this.#channels.clear();
    this.#lost.clear();
    await subscriber?.quit().catch(() => subscriber.disconnect());
  }

  #connection(): Redis | Cluster {
    if (this.#subscriber !== undefined) return this.#subscriber;
    const subscriber = this.#connect();
    subscriber.on("error", (err: unknown) => {
      // A lost connection is retried by ioredis; what it cost is read again below.
      this.#onError(err, "subscriber");
    });
    subscriber.on("smessage", (channel: string, message: string) => {
      for (const listener of this.#channels.get(channel)?.listeners ?? []) {
        listener.message(message);
      }
    });
    if (subscriber.isCluster) this.#watchShards(subscriber as Cluster);
    else this.#watchReconnections(subscriber as Redis);
    this.#subscriber = subscriber;
    return subscriber;
  }

  /** A standalone Redis: after every reconnection but the first, every channel subscribed again. */
  #watchReconnections(subscriber: Redis): void {
    let connectedBefore = false;
    subscriber.on("ready", () => {
      if (connectedBefore) this.#lose(this.#channels.keys());
      connectedBefore = true;
    });
  }

  /**
   * A cluster: a channel whose node said `sunsubscribe` is subscribed again; every
   * channel is when a sharded subscriber's connection ended or was replaced (its node
   * lost, failed over, or no longer a primary).
   */
  #watchShards(subscriber: Cluster): void {
    subscriber.on("nodeError", (err: unknown) => {
      const channel = lostShardChannel(err);
      if (channel !== undefined) this.#lose([channel]);
      else if (/Command queue state error/.test(String(err))) this.#lose(this.#channels.keys());
    });
    for (const event of ["-node", "-subscriber"]) {
      subscriber.on(event, () => this.#lose(this.#channels.keys()));
    }
    let connectedBefore = false;
    subscriber.on("ready", () => {
      // The whole cluster was lost and is back (the first "ready" is the first connection).
      if (connectedBefore) this.#lose(this.#channels.keys());
      connectedBefore = true;
    });
  }

  #lose(channels: Iterable<string>): void {
    for (const channel of channels) this.#lost.add(channel);
    // A try waiting for its turn goes now: the connection may be back.
    this.#wake?.();
    if (this.#lost.size === 0 || this.#resubscribing) return;
    this.#resubscribing = true;
    void this.#resubscribeLost(this.#subscriber as Redis | Cluster);
  }

  /**
   * Subscribes the lost channels again until each holds, then its listeners resync. On
   * a cluster the slot map is asked again first (the slot may have moved) and each
   * channel unsubscribed and subscribed on its slot's primary now. After a try that
   * fails the next one waits a little longer, unless the connection is ready again.
   */
  async #resubscribeLost(subscriber: Redis | Cluster): Promise<void> {
    let wait = RESUBSCRIBE_FIRST_MS;
    const cluster = subscriber.isCluster ? (subscriber as Cluster) : undefined;
    try {
      while (this.#lost.size > 0 && this.#subscriber === subscriber) {
        if (cluster !== undefined) {
          await new Promise<void>((resolve) => cluster.refreshSlotsCache(() => resolve()));
        }
        const channels = [...this.#lost].filter((c) => this.#channels.has(c));
        this.#lost.clear();
        const failed: string[] = [];
        await Promise.all(
          channels.map(async (channel) => {
            try {
              if (cluster !== undefined) await cluster.sunsubscribe(channel).catch(() => {});
              await subscriber.ssubscribe(channel);
              // The last listener left meanwhile: not kept subscribed for nobody.
              if (!this.#channels.has(channel)) await subscriber.sunsubscribe(channel);
            } catch (err) {
              this.#onError(err, "resubscribe");
              failed.push(channel);
              return;
            }
            for (const listener of this.#channels.get(channel)?.listeners ?? []) {
              listener.resync();
            }
          }),
        );
        if (failed.length === 0) {
          wait = RESUBSCRIBE_FIRST_MS;
          continue;
        }
        for (const channel of failed) this.#lost.add(channel);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          this.#wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#wake = undefined;
        wait = Math.min(wait * 2, RESUBSCRIBE_MOST_MS);
      }
    } finally {
      this.#resubscribing = false;
    }
  }
}
