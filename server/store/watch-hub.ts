import { Code, ConnectError } from "@connectrpc/connect";
import type { SuggestionLists } from "../domain/fold.js";
import { INBOX_PAGE_SIZE_DEFAULT } from "../domain/inbox-page.js";
import { isRedisFailure } from "../redis/store-condition.js";
import { HeartbeatClock } from "./heartbeat-clock.js";
import type { InboxEntry } from "./inbox-entries.js";
import { sessionKeys, workspaceKeys } from "./keys.js";
import type { ChannelListener, PubSub } from "./pubsub.js";
import type { Pushing, PushSink } from "./push-source.js";
import type { SuggestionStore } from "./suggestion-store.js";
import { type Heartbeat, type Snapshot, Watcher } from "./watcher.js";

/**
 * A watch as the hub hands it: read as an iterator, or pushed (store/push-source.ts).
 * One that asked for heartbeats is a `Watch<T | Heartbeat>`: HEARTBEAT (store/watcher.ts)
 * comes while nothing changes.
 */
export type Watch<T> = AsyncIterableIterator<T> & {
  pushTo(sink: PushSink<T>): Pushing;
};

/** Why a watch ends when the hub closes (the server shuts down): the client watches again. */
export function shuttingDown(): ConnectError {
  return new ConnectError("the server is shutting down", Code.Unavailable);
}

/** The local watchers of one channel (a session's, a workspace's) and its one subscription. */
interface SessionWatch {
  readonly channel: string;
  /** Reads what the watchers of this channel are sent. */
  readonly read: () => Promise<Snapshot>;
  readonly watchers: Set<Watcher>;
  /** Hears the channel's changes on the shared subscriber. */
  readonly listener: ChannelListener;
  /** Settles once Redis has acknowledged the SUBSCRIBE. */
  subscribed: Promise<unknown>;
  /** A read of the lists is in flight. */
  refreshing: boolean;
  /** A change arrived (or a watcher joined) during that read: read once more. */
  again: boolean;
  /** A read has succeeded: a later failed read is tried again for a while. */
  readOnce: boolean;
}

/**
 * How long a watch that has been answered once rides out a Redis that does not answer
 * (restarted, failed over, replaced behind its address): its read is tried again every
 * `READ_AGAIN_MS`, and only a Redis still not answering after this ends it UNAVAILABLE.
 */
export const RIDE_OUT_MS = 15_000;
/** The pause between two tries of a failed read. */
export const READ_AGAIN_MS = 250;

/**
 * The fan-out behind WatchSuggestions: one Redis subscriber connection per server
 * instance (the shared `PubSub`; on a cluster one per primary with a watched channel),
 * however many watchers it serves. Every script tells the session's `changes` channel
 * (SPUBLISH, in the session's slot) after each append, so a change made through any
 * instance reaches every instance. A session's channel is subscribed while it has at least one local
 * watcher and unsubscribed when the last one leaves; on a message the lists are read
 * once and handed to every local watcher of that session, and a burst of messages that
 * arrives during a read costs one more read, not one per message. Pinned by
 * test/rpc/watch.test.ts and test/e2e/watch-scale.test.ts. A workspace's inbox is
 * watched the same way, on the workspace's channel, which every script that changes a
 * chat of the workspace tells (test/rpc/workspace-watch.test.ts).
 */
export class WatchHub {
  readonly #store: SuggestionStore;
  readonly #pubsub: PubSub;
  readonly #sessions = new Map<string, SessionWatch>();
  /** The heartbeats of every watch of this hub, on one timer. */
  readonly #clock = new HeartbeatClock();
  #watchers = 0;
  #closed = false;

  /**
   * @param store reads the lists (on the store's own client, not the subscriber).
   * @param pubsub the instance's subscriber, shared with the start locks.
   */
  constructor(store: SuggestionStore, pubsub: PubSub) {
    this.#store = store;
    this.#pubsub = pubsub;
  }

  /** Sessions with at least one local watcher (for tests and metrics). */
  get watchedSessions(): number {
    return this.#sessions.size;
  }

  /** Watches open now, of sessions and workspaces (for tests and metrics). */
  get watchers(): number {
    return this.#watchers;
  }

  /** Watches whose heartbeats run now. */
  get beating(): number {
    return this.#clock.beating;
  }

  /**
   * A session's lists: at once, then after every change, until `signal` aborts (the
   * client left, the deadline passed, the server shuts down) or the hub closes, which
   * end it (as the signal's reason tells, rpc/watched-stream.ts), or the hub closes,
   * which fails it UNAVAILABLE (`shuttingDown`). A Redis failure before its first lists
   * ends it with UNAVAILABLE; after them, a Redis that does not answer is read again for
   * up to `RIDE_OUT_MS` (the log is the truth: nothing changed meanwhile is missed)
   * before it ends so. With `heartbeatMs`, HEARTBEAT comes at that interval while nothing changes.
   */
  watch(sessionId: string, signal: AbortSignal): Watch<SuggestionLists>;
  watch(
    sessionId: string,
    signal: AbortSignal,
    heartbeatMs: number,
  ): Watch<SuggestionLists | Heartbeat>;
  watch(
    sessionId: string,
    signal: AbortSignal,
    heartbeatMs = 0,
  ): Watch<SuggestionLists | Heartbeat> {
    const read = async () => {
      const { version, lists } = await this.#store.snapshot(sessionId);
      return { version, value: lists };
    };
    return this.#watchChannel(sessionKeys(sessionId).changes, read, signal, heartbeatMs);
  }

  /**
   * The first page of a workspace's inbox: at once, then after every change in a chat
   * of the workspace (made through any instance), ending as `watch` does.
   */
  watchWorkspace(workspaceId: string, signal: AbortSignal): Watch<InboxEntry[]>;
  watchWorkspace(
    workspaceId: string,
    signal: AbortSignal,
    heartbeatMs: number,
  ): Watch<InboxEntry[] | Heartbeat>;
  watchWorkspace(
    workspaceId: string,
    signal: AbortSignal,
    heartbeatMs = 0,
  ): Watch<InboxEntry[] | Heartbeat> {
    const read = async () => {
      const { entries } = await this.#store.inbox.page(workspaceId, INBOX_PAGE_SIZE_DEFAULT, "");
      return { version: entries.map((e) => e.member).join(" "), value: entries };
    };
    return this.#watchChannel(workspaceKeys(workspaceId).changes, read, signal, heartbeatMs);
  }

  /** A watcher of `channel`, joined now, that leaves when it ends. */
  #watchChannel<T>(
    channel: string,
    read: () => Promise<Snapshot<T>>,
    signal: AbortSignal,
    heartbeatMs: number,
  ): Watcher<T> {
    if (this.#closed) {
      const refused = new Watcher<T>();
      refused.fail(shuttingDown());
      return refused;
    }
    const end = () => watcher.end();
    const watcher: Watcher<T> = new Watcher<T>(() => {
      this.#watchers--;
      signal.removeEventListener("abort", end);
      this.#leave(session, watcher as Watcher);
    });
    this.#watchers++;
    if (heartbeatMs > 0) watcher.beatEvery(this.#clock, heartbeatMs);
    const session = this.#join(channel, read, watcher as Watcher);
    signal.addEventListener("abort", end);
    if (signal.aborted) end();
    return watcher;
  }

  /**
   * Fails every watch UNAVAILABLE (`shuttingDown`: never a clean end, which would tell
   * a client that nothing more will come) and leaves every channel.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const session of this.#sessions.values()) {
      for (const watcher of session.watchers) watcher.fail(shuttingDown());
    }
    for (const session of this.#sessions.values()) {
      this.#pubsub.unlisten(session.channel, session.listener);
    }
    this.#sessions.clear();
  }

  #join(channel: string, read: () => Promise<Snapshot>, watcher: Watcher): SessionWatch {
    let session = this.#sessions.get(channel);
    if (session === undefined) {
      const created: SessionWatch = {
        channel,
        read,
        watchers: new Set(),
        // Every message, and every resync after a lost connection, reads again.
        listener: { message: () => this.#refresh(created), resync: () => this.#refresh(created) },
        subscribed: Promise.resolve(),
        refreshing: false,
        again: false,
        readOnce: false,
      };
      created.subscribed = this.#pubsub.listen(channel, created.listener);
      created.subscribed.catch(() => {
        // Reported to the watchers by the read that waits for it.
      });
      session = created;
      this.#sessions.set(channel, session);
    }
    session.watchers.add(watcher);
    this.#refresh(session);
    return session;
  }

  #leave(session: SessionWatch, watcher: Watcher): void {
    session.watchers.delete(watcher);
    if (session.watchers.size === 0) this.#drop(session);
  }

  /** Forgets a session and unsubscribes its channel, if it is still the current one. */
  #drop(session: SessionWatch): void {
    if (this.#sessions.get(session.channel) !== session) return;
    this.#sessions.delete(session.channel);
    this.#pubsub.unlisten(session.channel, session.listener);
  }

  /** Reads the lists for every watcher of a session, coalescing requests that overlap. */
  #refresh(session: SessionWatch): void {
    if (session.refreshing) {
      session.again = true;
      return;
    }
    session.refreshing = true;
    void this.#readLoop(session);
  }

  async #readLoop(session: SessionWatch): Promise<void> {
    try {
      // Subscribed before the first read, so no change falls between the two.
      await session.subscribed;
      let failingSince: number | undefined;
      do {
        session.again = false;
        let snapshot: Snapshot;
        try {
          // A session: O(offers) through the projection, however long its history.
          snapshot = await session.read();
        } catch (err) {
          // A watch not answered yet fails at once (its client learns Redis is down), as
          // does one whose read failed for another reason than Redis not answering (or
          // not confirming the projection a read writes).
          failingSince ??= Date.now();
          if (!session.readOnce || !isRedisFailure(err)) throw err;
          if (Date.now() - failingSince > RIDE_OUT_MS) throw err;
          session.again = true;
          await new Promise((resolve) => setTimeout(resolve, READ_AGAIN_MS));
          continue;
        }
        failingSince = undefined;
        session.readOnce = true;
        for (const watcher of session.watchers) watcher.offer(snapshot);
      } while (session.again && session.watchers.size > 0);
    } catch (err) {
      this.#drop(session);
      for (const watcher of session.watchers) watcher.fail(err);
    } finally {
      session.refreshing = false;
    }
  }
}
