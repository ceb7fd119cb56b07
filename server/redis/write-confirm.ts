import type { Redis } from "ioredis";
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

/** A WAIT sent, or owed: where it was written, once it is, and the replicas it counted. */
export interface SentWait {
  readonly place: WritePlace;
  readonly acks: Promise<number>;
}

/**
 * `WAIT replicas timeout`, sent to the node of `slot` on a cluster (a WAIT names no key;
 * ioredis would send it to any node), so that it follows the write of that slot on the
 * same connection. It notes where it was written.
 */
class WaitCall extends Command {
  constructor(
    setting: WriteConfirmation,
    private readonly writeSlot: number,
    readonly place: WritePlace = { socket: undefined, at: 0 },
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
 * One WAIT at a time per connection, for every write made on it since the last. Redis
 * blocks a connection that sent a WAIT until the replicas answer, and holds what comes
 * after it unread, so a WAIT after each write would have a primary take an instance's
 * writes (all on one connection) one replica round trip at a time. Instead the writes a
 * turn puts on a connection owe one WAIT, sent as the turn's writes leave
 * (redis-client.ts `batchWritesPerTurn` calls `sendOwedWait` before it uncorks); while
 * it is unanswered, the writes of later turns still leave at once and queue in Redis
 * behind it, and owe together the next WAIT, sent when the first answers. A WAIT counts
 * the replicas that hold everything the connection wrote before it, so each waits for
 * the one written after it, and under load a primary takes a whole queue of writes per
 * replica round trip.
 */
interface OwedWait extends SentWait {
  readonly setting: WriteConfirmation;
  readonly answer: (acks: number) => void;
}

/** A connection whose writes leave once a turn: the WAIT it owes, and whether one is out. */
interface ConnectionWaits {
  owed: OwedWait | undefined;
  out: boolean;
}

const connectionWaits = new WeakMap<object, ConnectionWaits>();

/** Marks `socket` as one whose writes leave once a turn, with `sendOwedWait` before. */
export function confirmsPerTurn(socket: object): void {
  connectionWaits.set(socket, { owed: undefined, out: false });
}

/**
 * The WAIT owed on `socket`, for a confirmed write just written there; undefined when
 * the socket's writes are not batched per turn (then the write sends a WAIT of its own).
 */
export function turnWait(socket: object, setting: WriteConfirmation): SentWait | undefined {
  const waits = connectionWaits.get(socket);
  if (waits === undefined) return undefined;
  if (waits.owed !== undefined) return waits.owed;
  let answer: (acks: number) => void = () => undefined;
  const acks = new Promise<number>((resolve) => {
    answer = resolve;
  });
  waits.owed = { place: { socket: undefined, at: 0 }, acks, setting, answer };
  return waits.owed;
}

/**
 * Sends on `connection` the WAIT owed on `socket` (its stream), unless one is out
 * already (then it leaves when that one answers); called while the turn's writes are
 * still held, so the WAIT leaves with them.
 */
export function sendOwedWait(connection: Redis, socket: object): void {
  const waits = connectionWaits.get(socket);
  const owed = waits?.owed;
  if (waits === undefined || owed === undefined || waits.out) return;
  waits.owed = undefined;
  waits.out = true;
  const answered = (acks: number) => {
    owed.answer(acks);
    waits.out = false;
    sendOwedWait(connection, socket);
  };
  const call = new WaitCall(owed.setting, 0, owed.place);
  (connection.sendCommand(call) as Promise<number>).then(answered, () => answered(-1));
}

/** The socket that took the last write of a connection batched per turn (`noteSocketWrite`). */
let lastSocket: object | undefined;
let socketWrites = 0;

/** Notes a write on `socket`, so that `confirmAfter` knows where its commands went. */
export function noteSocketWrite(socket: object): void {
  lastSocket = socket;
  socketWrites++;
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
  const writesBefore = socketWrites;
  const result = write();
  // Noted on the failure path only: a refusal counts, a disk refusal makes a problem.
  result.catch((err: unknown) => storeCondition(client).failed(err));
  if (setting === undefined) return result;
  const socket = socketWrites > writesBefore ? lastSocket : undefined;
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
