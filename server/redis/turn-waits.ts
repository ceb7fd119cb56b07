import type { Redis } from "ioredis";
import { Command } from "ioredis";

/*
 * Where each write and each WAIT was written, and the WAITs the connections batched per
 * turn owe (redis-client.ts `batchWritesPerTurn`): what write-confirm.ts reads to know
 * that a WAIT followed a write on its connection. It imports nothing of the client, which
 * calls it from its socket's writes.
 */

/**
 * How many replicas must hold a write before it is acknowledged (`REDIS_WAIT_REPLICAS`),
 * and how long Redis waits for them (`REDIS_WAIT_TIMEOUT_MS`).
 */
export interface WriteConfirmation {
  readonly replicas: number;
  readonly timeoutMs: number;
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
export class WaitCall extends Command {
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

/** A write that waits for replicas: where it was last written, and the WAIT owed there. */
export interface TrackedWrite {
  readonly setting: WriteConfirmation;
  readonly place: WritePlace;
  turn: SentWait | undefined;
}

/** A write of `setting` to track, not written yet. */
export function trackWrite(setting: WriteConfirmation): TrackedWrite {
  return { setting, place: { socket: undefined, at: 0 }, turn: undefined };
}

/**
 * Notes that `write` is being written on `socket` now (again, when ioredis sends it once
 * more after MOVED, ASK, TRYAGAIN or a reconnect), and takes the WAIT owed there.
 */
export function noteTracked(write: TrackedWrite, socket: object): void {
  noteWrite(write.place, socket);
  write.turn = turnWait(socket, write.setting);
}

/**
 * A command that notes, in `write` (if any), where it is written each time it is: on its
 * socket, or, inside a pipeline or a MULTI, on the socket the pipeline's write goes to
 * (written right after, in the same turn).
 */
export class NotedCommand extends Command {
  constructor(
    name: string,
    args: (string | Buffer | number)[],
    private readonly write: TrackedWrite | undefined,
  ) {
    super(name, args, { replyEncoding: "utf8" });
  }

  override toWritable(stream: object): string | Buffer {
    if (this.write === undefined) return super.toWritable(stream as never);
    const pipeline = stream as { isPipeline?: boolean; destination?: { redis?: Redis } };
    const socket = pipeline.isPipeline ? pipeline.destination?.redis?.stream : stream;
    if (socket !== undefined) noteTracked(this.write, socket);
    return super.toWritable(stream as never);
  }
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
