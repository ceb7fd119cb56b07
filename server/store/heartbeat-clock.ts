/** What a heartbeat is due on: a watch (store/watcher.ts), told when its beat is due. */
export interface BeatTarget {
  beat(): void;
}

/** One watch's heartbeat, as the clock keeps it. */
export interface Beating {
  /** When the next beat is due, in ms since the epoch (the clock's coarse time). */
  due: number;
  readonly periodMs: number;
  /** Undefined once the watch has ended: the entry is dropped when its slot comes. */
  target: BeatTarget | undefined;
}

/** The clock's resolution: a beat comes at most this late. */
const TICK_MS = 1_000;

/**
 * The heartbeats of every watch of one hub, on one timer, however many watches ask for
 * them: a timer per stream would cost 10,000 timers for 10,000 idle watchers. A hashed
 * timing wheel of one-second slots: each beat sits in the slot of its due time; a watch
 * that sends a message moves only its due time (`touch`, a field write in the hub's loop
 * over a chat's watchers), and its entry is moved when its old slot comes, so a busy
 * watch costs one look a period, not one per message. The timer runs while at least one
 * watch beats, and never holds the process open. Pinned by
 * test/store/heartbeat-clock.test.ts and the heartbeat tests of test/rpc/watch.test.ts.
 */
export class HeartbeatClock {
  readonly #slots = new Map<number, Beating[]>();
  #beating = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The time of the last tick (or `add`), read instead of `Date.now()` per message. */
  #now = Date.now();

  /** Watches whose heartbeats run now. */
  get beating(): number {
    return this.#beating;
  }

  /** Beats `target` every `periodMs` while nothing is sent to it (`touch`), until `remove`. */
  add(target: BeatTarget, periodMs: number): Beating {
    this.#now = Date.now();
    const beating: Beating = { due: this.#now + periodMs, periodMs, target };
    this.#place(beating);
    this.#beating++;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.tick(), TICK_MS);
      this.#timer.unref();
    }
    return beating;
  }

  /** Something was sent: the next beat is a whole period from now. */
  touch(beating: Beating): void {
    beating.due = this.#now + beating.periodMs;
  }

  /** The watch has ended: no more beats; the timer stops with the last one. */
  remove(beating: Beating): void {
    if (beating.target === undefined) return;
    beating.target = undefined;
    this.#beating--;
    if (this.#beating === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      this.#slots.clear();
    }
  }

  /** Beats every watch that is due (the timer calls it each second). */
  tick(now = Date.now()): void {
    this.#now = now;
    const current = Math.floor(now / TICK_MS);
    const due: number[] = [];
    for (const slot of this.#slots.keys()) if (slot <= current) due.push(slot);
    for (const slot of due) {
      const entries = this.#slots.get(slot) ?? [];
      this.#slots.delete(slot);
      for (const beating of entries) {
        const target = beating.target;
        if (target === undefined) continue;
        if (beating.due <= now) {
          beating.due = now + beating.periodMs;
          // A target that throws loses its own beat, never the others'.
          try {
            target.beat();
          } catch {}
        }
        // Ended within its beat (the stream could not take it): not placed again.
        if (beating.target !== undefined) this.#place(beating);
      }
    }
  }

  #place(beating: Beating): void {
    const slot = Math.max(Math.ceil(beating.due / TICK_MS), Math.floor(this.#now / TICK_MS) + 1);
    const entries = this.#slots.get(slot);
    if (entries === undefined) this.#slots.set(slot, [beating]);
    else entries.push(beating);
  }
}
