import { Command } from "ioredis";
import type { RedisClient } from "./redis-client.js";
import { storeCondition, WriteNotConfirmedError } from "./store-condition.js";
import {
  type SentWait,
  socketWritesSoFar,
  turnWait,
  WaitCall,
  type WriteConfirmation,
  type WritePlace,
} from "./turn-waits.js";

export type { SentWait, WriteConfirmation, WritePlace } from "./turn-waits.js";
export { noteWrite, turnWait } from "./turn-waits.js";

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

/**
 * Sends a WAIT of its own for the write just sent on `client` for `slot` (unused on a
 * single Redis): for a write that was not written at once (held while a connection
 * opens), and for one whose turn's WAIT did not follow it (`confirmed`).
 */
export function sendWait(client: RedisClient, setting: WriteConfirmation, slot: number): SentWait {
  const call = new WaitCall(setting, slot);
  const acks = client.sendCommand(call) as Promise<number>;
  // Read by `confirmed`, or not at all when the write itself failed.
  acks.catch(() => undefined);
  return { place: call.place, acks };
}

/**
 * Resolves once a WAIT that followed the write at `write` answers: throws
 * WriteNotConfirmedError when fewer replicas than asked confirmed it. A WAIT counts only
 * when it was written after the write on the same connection: the turn's (`waits[0]`),
 * or one sent with the write (`waits[1]`) when it was not written at once. A write
 * redirected to another node of a cluster (MOVED, ASK, a retry after a connection
 * closed) and followed by neither gets a WAIT of its own there, sent once its reply
 * came; a write whose connection was replaced cannot be confirmed (the new connection's
 * WAIT would not wait for it) and fails as unconfirmed.
 */
export async function confirmed(
  client: RedisClient,
  setting: WriteConfirmation,
  slot: number,
  write: WritePlace,
  waits: readonly (SentWait | undefined)[],
): Promise<void> {
  const follows = (wait: SentWait | undefined) =>
    wait !== undefined && wait.place.socket === write.socket && wait.place.at > write.at;
  for (let attempt = 0; attempt < 2; attempt++) {
    // A turn's WAIT is written as the turn ends, after the write's reply may have come.
    for (const wait of waits) await wait?.acks.catch(() => -1);
    const wait = waits.find(follows);
    if (wait !== undefined) {
      const acks = await wait.acks.catch(() => -1);
      if (acks >= setting.replicas) return;
      throw new WriteNotConfirmedError(setting.replicas, acks);
    }
    waits = [sendWait(client, setting, slot)];
  }
  throw new WriteNotConfirmedError(setting.replicas, -1);
}

/**
 * For a write that is not a script call (a MULTI, a SET): resolves to `write`'s result
 * once `setting.replicas` replicas confirmed it. `write` must send its commands when
 * called, on the connection of `key`'s slot; the turn's WAIT follows them there (or one
 * of its own when they were held). Without a setting on `client`, `write` alone.
 */
export async function confirmAfter<T>(
  client: RedisClient,
  key: string,
  write: () => Promise<T>,
): Promise<T> {
  const setting = confirmations.get(client);
  const writesBefore = socketWritesSoFar().count;
  const result = write();
  // Noted on the failure path only: a refusal counts, a disk refusal makes a problem.
  result.catch((err: unknown) => storeCondition(client).failed(err));
  if (setting === undefined) return result;
  const writesNow = socketWritesSoFar();
  const socket = writesNow.count > writesBefore ? writesNow.last : undefined;
  const wait =
    (socket === undefined ? undefined : turnWait(socket, setting)) ??
    sendWait(client, setting, new Command("get", [key]).getSlot());
  const value = await result;
  const acks = await wait.acks.catch(() => -1);
  if (acks < setting.replicas || (socket !== undefined && wait.place.socket !== socket)) {
    const err = new WriteNotConfirmedError(setting.replicas, acks);
    storeCondition(client).failed(err);
    throw err;
  }
  return value;
}
