import { type ChainableCommander, Command } from "ioredis";
import { type RedisClient, turnsOf } from "./redis-client.js";
import { storeCondition, WriteNotConfirmedError } from "./store-condition.js";
import {
  type SentWait,
  type TrackedWrite,
  TurnCommand,
  trackWrite,
  UTF8_REPLY,
  WaitCall,
  type WriteConfirmation,
} from "./turn-waits.js";

export type { TrackedWrite, WriteConfirmation } from "./turn-waits.js";
export { noteTracked, TurnCommand, trackWrite, UTF8_REPLY } from "./turn-waits.js";

/**
 * Makes every write of `client` (script calls, `confirmAfter`) wait for `setting.replicas`
 * replicas; 0 leaves writes as they are, with no WAIT sent at all. `client` must be one
 * `connectRedis` made (redis-client.ts), whose connections note where each write goes.
 */
export function confirmWrites(client: RedisClient, setting: WriteConfirmation): void {
  const turns = turnsOf(client);
  if (turns === undefined) throw new Error("writes are confirmed only on a client of connectRedis");
  turns.confirmation = setting.replicas > 0 ? setting : undefined;
}

/** The confirmation `client`'s writes wait for; undefined when none (the default). */
export function writeConfirmation(client: RedisClient): WriteConfirmation | undefined {
  return turnsOf(client)?.confirmation;
}

/** A write of `client` to track, when its writes wait for replicas. */
export function trackedWrite(client: RedisClient): TrackedWrite | undefined {
  const turns = turnsOf(client);
  const setting = turns?.confirmation;
  return turns === undefined || setting === undefined ? undefined : trackWrite(turns, setting);
}

/**
 * Sends a WAIT of its own on `client` for `slot` (unused on a standalone Redis), for a
 * write that no owed WAIT followed (`confirmed`).
 */
function sendWait(client: RedisClient, write: TrackedWrite, slot: number): SentWait {
  const call = new WaitCall(write.turns, write.setting, slot);
  const acks = client.sendCommand(call) as Promise<number>;
  // Read by `confirmed`, or not at all when the write itself failed.
  acks.catch(() => undefined);
  return { place: call.place, acks };
}

/**
 * Called right after `write` was sent on `client` for `slot`. The function it returns
 * resolves, once the write's reply came, when a WAIT that followed the write's last
 * writing confirmed it; else it throws WriteNotConfirmedError, noted as a refusal. A
 * write held while its connection opens sends no WAIT of its own then: once written, it
 * takes the WAIT its turn owes there, as every write does. Writes held together (the
 * calls of a failover or a reconnection) thus owe one WAIT between them, not one each:
 * on a primary with no replica online yet each WAIT holds the connection for
 * REDIS_WAIT_TIMEOUT_MS, and the reads queued behind a WAIT apiece would wait the sum.
 */
export function confirmation(
  client: RedisClient,
  slot: number,
  write: TrackedWrite,
): () => Promise<void> {
  return async () => {
    try {
      await confirmed(client, write, slot);
    } catch (err) {
      storeCondition(client).failed(err);
      throw err;
    }
  };
}

/**
 * Resolves once a WAIT that followed the write at `write` answers: throws
 * WriteNotConfirmedError when fewer replicas than asked confirmed it. A WAIT counts only
 * when it was written after the write on the same connection: the turn's. A write
 * redirected to another node of a cluster (MOVED, ASK, a retry after a connection
 * closed) and followed by no owed WAIT gets a WAIT of its own there, sent once its reply
 * came; a write whose connection was replaced cannot be confirmed (the new connection's
 * WAIT would not wait for it) and fails as unconfirmed.
 */
async function confirmed(client: RedisClient, tracked: TrackedWrite, slot: number): Promise<void> {
  const { setting, place: write } = tracked;
  const follows = (wait: SentWait | undefined): wait is SentWait =>
    wait !== undefined && wait.place.socket === write.socket && wait.place.at > write.at;
  let wait = tracked.turn;
  for (let attempt = 0; attempt < 2; attempt++) {
    // A turn's WAIT is written as the turn ends, after the write's reply may have come.
    const acks = await wait?.acks.catch(() => -1);
    if (follows(wait)) {
      if ((acks ?? -1) >= setting.replicas) return;
      throw new WriteNotConfirmedError(setting.replicas, acks ?? -1);
    }
    if (attempt === 1) break;
    wait = sendWait(client, tracked, slot);
  }
  throw new WriteNotConfirmedError(setting.replicas, -1);
}

/**
 * `chain` (a pipeline or a MULTI) ending in a PING that notes in `write` where the chain
 * is written (`TurnCommand`), for `confirmAfter`; its reply is one more at the end.
 * Without a write to track (writes not confirmed), `chain` as it is.
 */
export function notedLast(
  chain: ChainableCommander,
  write: TrackedWrite | undefined,
): ChainableCommander {
  if (write === undefined) return chain;
  (chain as unknown as { sendCommand(command: Command): unknown }).sendCommand(
    new TurnCommand(undefined, "ping", [], UTF8_REPLY, write),
  );
  return chain;
}

/**
 * For a write that is not a script call (a MULTI, a SET): resolves to `write`'s result
 * once `setting.replicas` replicas confirmed it. `write` must send its commands when
 * called, on the connection of `key`'s slot, the last of them a `TurnCommand` tracking
 * the write it is given (when it is given one): the WAIT owed on that connection follows
 * them there, and counts only when written after their last writing (`confirmation`).
 * Without a setting on `client`, `write` alone.
 */
export async function confirmAfter<T>(
  client: RedisClient,
  key: string,
  write: (tracked: TrackedWrite | undefined) => Promise<T>,
): Promise<T> {
  const tracked = trackedWrite(client);
  const result = write(tracked);
  // Noted on the failure path only: a refusal counts, a disk refusal makes a problem.
  result.catch((err: unknown) => storeCondition(client).failed(err));
  if (tracked === undefined) return result;
  const confirm = confirmation(client, new Command("get", [key]).getSlot(), tracked);
  const value = await result;
  await confirm();
  return value;
}
