import type { Cluster, Redis } from "ioredis";

/** What one listener of a channel hears. */
export interface ChannelListener {
  /** A message published on the channel. */
  message(message: string): void;
  /**
   * The connection came back after a loss and the channel is subscribed again:
   * messages published meanwhile are lost, so the listener reads again what it needs.
   */
  resync(): void;
}

interface Channel {
  readonly listeners: Set<ChannelListener>;
  readonly subscribed: Promise<unknown>;
}

/**
 * One Redis subscriber connection per server instance, shared by everything that
 * listens (the watch hub, the start locks), with channels counted by reference: a
 * channel is subscribed while it has at least one listener and unsubscribed when the
 * last one leaves. After a reconnection it subscribes every channel again and then
 * tells every listener to resync, so no change falls between the two
 * (test/rpc/watch.test.ts restarts Redis under watchers).
 */
export class PubSub {
  readonly #connect: () => Redis | Cluster;
  readonly #channels = new Map<string, Channel>();
  #subscriber: Redis | Cluster | undefined;

  /**
   * @param connect makes the subscriber connection, opened at the first listener; the
   *   server passes `subscriberConnection(client)` (a duplicate, or one node of a cluster).
   */
  constructor(connect: () => Redis | Cluster) {
    this.#connect = connect;
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
      const subscribed = this.#connection().subscribe(channel);
      entry = { listeners: new Set(), subscribed };
      this.#channels.set(channel, entry);
    }
    entry.listeners.add(listener);
    try {
      await entry.subscribed;
    } catch (err) {
      this.unlisten(channel, listener);
      // A later listener tries again rather than waiting on the failed SUBSCRIBE.
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
    this.#subscriber?.unsubscribe(channel).catch(() => {
      // The connection is gone, and with it the subscription.
    });
  }

  /** Closes the connection; listeners hear nothing more. */
  async close(): Promise<void> {
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    this.#channels.clear();
    await subscriber?.quit().catch(() => subscriber.disconnect());
  }

  #connection(): Redis | Cluster {
    if (this.#subscriber !== undefined) return this.#subscriber;
    const subscriber = this.#connect();
    let connectedBefore = false;
    subscriber.on("error", () => {
      // A lost connection is retried by ioredis, which subscribes again on its own.
    });
    subscriber.on("ready", () => {
      if (!connectedBefore) {
        connectedBefore = true;
        return;
      }
      // ioredis subscribes again right after this event; subscribing once more
      // (harmless) and waiting for the answer puts the resyncs after the subscriptions.
      setImmediate(() => this.#resubscribe(subscriber));
    });
    subscriber.on("message", (channel: string, message: string) => {
      for (const listener of this.#channels.get(channel)?.listeners ?? []) {
        listener.message(message);
      }
    });
    this.#subscriber = subscriber;
    return subscriber;
  }

  #resubscribe(subscriber: Redis | Cluster): void {
    const channels = [...this.#channels.keys()];
    if (channels.length === 0) return;
    subscriber.subscribe(...channels).then(
      () => {
        for (const entry of this.#channels.values()) {
          for (const listener of entry.listeners) listener.resync();
        }
      },
      () => {
        // Lost again: the next "ready" resyncs.
      },
    );
  }
}
