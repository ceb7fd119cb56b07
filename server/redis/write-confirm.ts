import { type ChainableCommander, Command } from "ioredis";
import type { RedisClient } from "./redis-client.js";
import { storeCondition, WriteNotConfirmedError } from "./store-condition.js";
import {
  NotedCommand,
  type SentWait,
  turnWait,
  WaitCall,
  type WriteConfirmation,
  type WritePlace,
} from "./turn-waits.js";

export type { SentWait, WriteConfirmation, WritePlace } from "./turn-waits.js";
export { NotedCommand, noteWrite, turnWait } from "./turn-waits.js";

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
    if (attempt === 1) break;
    waits = [sendWait(client, setting, slot)];
  }
  throw new WriteNotConfirmedError(setting.replicas, -1);
}

/**
 * `chain` (a pipeline or a MULTI) ending in a PING that notes in `place` where the chain
 * is written (`NotedCommand`), for `confirmAfter`; its reply is one more at the end.
 * Without a place (writes not confirmed), `chain` as it is.
 */
export function notedLast(
  chain: ChainableCommander,
  place: WritePlace | undefined,
): ChainableCommander {
  if (place === undefined) return chain;
  (chain as unknown as { sendCommand(command: Command): unknown }).sendCommand(
    new NotedCommand("ping", [], place),
  );
  return chain;
}

/**
 * For a write that is not a script call (a MULTI, a SET): resolves to `write`'s result
 * once `setting.replicas` replicas confirmed it. `write` must send its commands when
 * called, on the connection of `key`'s slot, the last of them a `NotedCommand` noting
 * `place` when one is given (each time it is written: ioredis sends a command again after MOVED, ASK,
 * TRYAGAIN or a reconnect). The WAIT owed on that connection follows them there (or one
 * of their own, when they were held), and counts only when written after their last
 * writing (`confirmed`). Without a setting on `client`, `write` alone.
 */
export async function confirmAfter<T>(
  client: RedisClient,
  key: string,
  write: (place: WritePlace | undefined) => Promise<T>,
): Promise<T> {
  const setting = confirmations.get(client);
  const place: WritePlace | undefined =
    setting === undefined ? undefined : { socket: undefined, at: 0 };
  const result = write(place);
  // Noted on the failure path only: a refusal counts, a disk refusal makes a problem.
  result.catch((err: unknown) => storeCondition(client).failed(err));
  if (setting === undefined || place === undefined) return result;
  const slot = new Command("get", [key]).getSlot();
  const turn = place.socket === undefined ? undefined : turnWait(place.socket, setting);
  const own = turn === undefined ? sendWait(client, setting, slot) : undefined;
  const value = await result;
  try {
    await confirmed(client, setting, slot, place, [turn, own]);
  } catch (err) {
    storeCondition(client).failed(err);
    throw err;
  }
  return value;
}
