import { Command } from "ioredis";
import type { RedisClient } from "./redis-client.js";
import { storeCondition, WriteNotConfirmedError } from "./store-condition.js";

/**
 * How many replicas must hold a write before it is acknowledged (`REDIS_WAIT_REPLICAS`),
 * and how long Redis waits for them (`REDIS_WAIT_TIMEOUT_MS`).
 */
export interface WriteConfirmation {
  readonly replicas: number;
  readonly timeoutMs: number;
}

const confirmations = new WeakMap<RedisClient, WriteConfirmation>();

/**
 * Makes every write of `client` (script calls, `confirmAfter`) wait for `setting.replicas`
 * replicas; 0 leaves writes as they are, with no WAIT sent at all.
 */
export function confirmWrites(client: RedisClient, setting: WriteConfirmation): void {
  if (setting.replicas > 0) confirmations.set(client, setting);
  else confirmations.delete(client);
}

/** The confirmation `client`'s writes wait for; undefined when none (the default). */
export function writeConfirmation(client: RedisClient): WriteConfirmation | undefined {
  return confirmations.get(client);
}

/** Counts every write a socket takes, so that a WAIT is known to follow its write. */
let written = 0;

/** Where and when a command was last written: its socket and its place among all writes. */
export interface WritePlace {
  socket: object | undefined;
  at: number;
}

/** Notes that a command is being written on `socket` now. */
export function noteWrite(place: WritePlace, socket: object): void {
  place.socket = socket;
  place.at = ++written;
}

/**
 * `WAIT replicas timeout`, sent to the node of `slot` on a cluster (a WAIT names no key;
 * ioredis would send it to any node), so that it follows the write of that slot on the
 * same connection. It notes where it was written.
 */
class WaitCall extends Command {
  readonly place: WritePlace = { socket: undefined, at: 0 };

  constructor(
    setting: WriteConfirmation,
    private readonly writeSlot: number,
  ) {
    super("wait", [setting.replicas, setting.timeoutMs], { replyEncoding: "utf8" });
  }

  override getSlot(): number {
    return this.writeSlot;
  }

  override toWritable(socket: object): string | Buffer {
    noteWrite(this.place, socket);
    return super.toWritable(socket);
  }
}

/**
 * Sends a WAIT for the write just sent on `client` for `slot` (unused on a single Redis);
 * call it synchronously right after sending the write, so both leave in one write of the
 * connection (redis-client.ts `batchWritesPerTurn`) and cost one round trip.
 */
export function sendWait(
  client: RedisClient,
  setting: WriteConfirmation,
  slot: number,
): { readonly place: WritePlace; readonly acks: Promise<number> } {
  const call = new WaitCall(setting, slot);
  const acks = client.sendCommand(call) as Promise<number>;
  // Read by `confirmed`, or not at all when the write itself failed.
  acks.catch(() => undefined);
  return { place: call.place, acks };
}

/**
 * Resolves once the WAIT sent after a write answers: throws WriteNotConfirmedError when
 * fewer replicas than asked confirmed it. The WAIT counts only when it was written after
 * the write on the same connection (`write`): a write redirected to another node of a
 * cluster (MOVED, ASK, a retry after a connection closed) gets a second WAIT there, sent
 * once its reply came; a write whose connection was replaced cannot be confirmed (the
 * new connection's WAIT would not wait for it) and fails as unconfirmed.
 */
export async function confirmed(
  client: RedisClient,
  setting: WriteConfirmation,
  slot: number,
  write: WritePlace,
  wait: { readonly place: WritePlace; readonly acks: Promise<number> },
): Promise<void> {
  let current = wait;
  for (let attempt = 0; ; attempt++) {
    if (current.place.socket === write.socket && current.place.at > write.at) {
      const acks = await current.acks.catch(() => -1);
      if (acks >= setting.replicas) return;
      throw new WriteNotConfirmedError(setting.replicas, acks);
    }
    if (attempt === 1) throw new WriteNotConfirmedError(setting.replicas, -1);
    await current.acks.catch(() => undefined);
    current = sendWait(client, setting, slot);
  }
}

/**
 * For a write that is not a script call (a MULTI, a SET): resolves to `write`'s result
 * once `setting.replicas` replicas confirmed it. `write` must send its commands when
 * called, on the connection of `key`'s slot; the WAIT follows them there. Without a
 * setting on `client`, `write` alone.
 */
export async function confirmAfter<T>(
  client: RedisClient,
  key: string,
  write: () => Promise<T>,
): Promise<T> {
  const setting = confirmations.get(client);
  const result = write();
  // Noted on the failure path only: a refusal counts, a disk refusal makes a problem.
  result.catch((err: unknown) => storeCondition(client).failed(err));
  if (setting === undefined) return result;
  const slot = new Command("get", [key]).getSlot();
  const wait = sendWait(client, setting, slot);
  const value = await result;
  const acks = await wait.acks.catch(() => -1);
  if (acks < setting.replicas) {
    const err = new WriteNotConfirmedError(setting.replicas, acks);
    storeCondition(client).failed(err);
    throw err;
  }
  return value;
}
