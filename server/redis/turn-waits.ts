import type { Socket } from "node:net";
import type { Redis } from "ioredis";
import { Command } from "ioredis";

/** The options of an ioredis `Command` (its reply's encoding, above all). */
type CommandOptions = ConstructorParameters<typeof Command>[2];

/** The options of a command whose reply is read as text, not as bytes. */
export const UTF8_REPLY = Object.freeze({ replyEncoding: "utf8" as const });

/**
 * How many replicas must hold a write before it is acknowledged (`REDIS_WAIT_REPLICAS`),
 * and how long Redis waits for them (`REDIS_WAIT_TIMEOUT_MS`).
 */
export interface WriteConfirmation {
  readonly replicas: number;
  readonly timeoutMs: number;
}

/**
 * The most commands one write carries. A turn that answers many replies at once (64
 * calls in flight, each a step further) would otherwise write all its next steps at the
 * turn's end, while Redis sits idle, then wait idle itself while Redis runs them all: the
 * two take turns instead of working side by side. Eight to a write lets Redis start on
 * the first while the turn goes on. Measured with `npm run bench`
 * (docs/performance.md, "Choices the figures rest on"): SuggestTask and the
 * settles made about a third more calls a second, for less server CPU each.
 */
export const COMMANDS_PER_WRITE = 8;

/** Where and when a command was last written: its socket and its place among all writes. */
export interface WritePlace {
  socket: object | undefined;
  at: number;
}

/** A WAIT sent, or owed: where it was written, once it is, and the replicas it counted. */
export interface SentWait {
  readonly place: WritePlace;
  readonly acks: Promise<number>;
}

/**
 * One WAIT at a time per connection, for every write made on it since the last. Redis
 * blocks a connection that sent a WAIT until the replicas answer, and holds what comes
 * after it unread, so a WAIT after each write would have a primary take an instance's
 * writes (all on one connection) one replica round trip at a time. Instead the writes a
 * turn puts on a connection owe one WAIT, sent as the turn's writes leave (just before
 * the connection's socket is uncorked); while it is unanswered, the writes of later
 * turns still leave at once and queue in Redis behind it, and owe together the next
 * WAIT, sent when the first answers. A WAIT counts the replicas that hold everything the
 * connection wrote before it, so each waits for the one written after it, and under load
 * a primary takes a whole queue of writes per replica round trip.
 */
interface OwedWait extends SentWait {
  readonly setting: WriteConfirmation;
  readonly answer: (acks: number) => void;
}

/** One connection's turn: whether its socket is corked, what it holds, the WAIT it owes. */
interface ConnectionTurn {
  readonly connection: Redis;
  readonly socket: Socket;
  corked: boolean;
  held: number;
  owed: OwedWait | undefined;
  out: boolean;
}

/**
 * The writes of one client's connections (its own, or each node's of a cluster), one
 * event-loop turn at a time. The service's commands (script calls, WAITs and the others:
 * `ScriptCall`, `WaitCall`, `TurnCommand`) call `writing` with the socket ioredis hands
 * to their `toWritable`, right before ioredis writes them there: the turn's first one
 * corks the socket, which is uncorked once the turn's I/O is done (`setImmediate`), so
 * the turn's commands leave in one `writev` (or one for every COMMANDS_PER_WRITE of
 * them). ioredis's auto-pipelining batches the same way but sends a connection's next
 * batch only once Redis has answered the last one, so with `appendfsync always` every
 * call waited for the fsync of the batch before its own; here the batches follow one
 * another and Redis answers each as it comes. Measured with `npm run bench`
 * (docs/performance.md, "Choices the figures rest on"): Get and SuggestTask made more
 * calls a second for less CPU each. Order is kept (a cork only holds writes back).
 * Before it uncorks, the WAIT the turn's confirmed writes owe joins them, unless one is
 * out already. Pinned by test/redis/write-batching.test.ts and
 * test/cluster/cluster-write-batching.test.ts.
 */
export class TurnWrites {
  /** Counts every write noted, so that a WAIT is known to follow its write. */
  #written = 0;
  readonly #turns = new WeakMap<object, ConnectionTurn>();
  /** The confirmation the client's writes wait for; undefined when none (the default). */
  confirmation: WriteConfirmation | undefined;

  /** Takes `connection`'s socket (just opened: its `connect` event) as one written per turn. */
  connected(connection: Redis): void {
    const socket = connection.stream as Socket;
    this.#turns.set(socket, {
      connection,
      socket,
      corked: false,
      held: 0,
      owed: undefined,
      out: false,
    });
  }

  /**
   * A command of the service is written on `socket` now: held with the turn's others,
   * and, with `place`, noted there.
   */
  writing(socket: object, place?: WritePlace): void {
    if (place !== undefined) {
      place.socket = socket;
      place.at = ++this.#written;
    }
    const turn = this.#turns.get(socket);
    if (turn === undefined) return;
    if (!turn.corked) {
      turn.corked = true;
      turn.held = 0;
      turn.socket.cork();
      setImmediate(() => this.#uncork(turn));
    } else if (turn.held === COMMANDS_PER_WRITE) {
      turn.held = 0;
      turn.socket.uncork();
      turn.socket.cork();
    }
    turn.held++;
  }

  /**
   * The WAIT owed on `socket`, for a confirmed write just written there; undefined when
   * the socket's writes are not batched per turn (then the write sends a WAIT of its own).
   */
  turnWait(socket: object, setting: WriteConfirmation): SentWait | undefined {
    const turn = this.#turns.get(socket);
    if (turn === undefined) return undefined;
    if (turn.owed !== undefined) return turn.owed;
    let answer: (acks: number) => void = () => undefined;
    const acks = new Promise<number>((resolve) => {
      answer = resolve;
    });
    turn.owed = { place: { socket: undefined, at: 0 }, acks, setting, answer };
    return turn.owed;
  }

  /** The turn is over: the WAIT it owes joins its writes, which then leave. */
  #uncork(turn: ConnectionTurn): void {
    this.#sendOwedWait(turn);
    turn.corked = false;
    turn.socket.uncork();
  }

  /**
   * Sends the WAIT owed on `turn`'s connection, unless one is out already (then it
   * leaves when that one answers); called while the turn's writes are still held, so the
   * WAIT leaves with them.
   */
  #sendOwedWait(turn: ConnectionTurn): void {
    const owed = turn.owed;
    if (owed === undefined || turn.out) return;
    turn.owed = undefined;
    turn.out = true;
    const answered = (acks: number) => {
      owed.answer(acks);
      turn.out = false;
      this.#sendOwedWait(turn);
    };
    const call = new WaitCall(this, owed.setting, 0, owed.place);
    (turn.connection.sendCommand(call) as Promise<number>).then(answered, () => answered(-1));
  }
}

/**
 * `WAIT replicas timeout`, sent to the node of `slot` on a cluster (a WAIT names no key;
 * ioredis would send it to any node), so that it follows the write of that slot on the
 * same connection. It notes where it was written.
 */
export class WaitCall extends Command {
  constructor(
    private readonly turns: TurnWrites,
    setting: WriteConfirmation,
    private readonly writeSlot: number,
    readonly place: WritePlace = { socket: undefined, at: 0 },
  ) {
    super("wait", [setting.replicas, setting.timeoutMs], UTF8_REPLY);
  }

  override getSlot(): number {
    return this.writeSlot;
  }

  override toWritable(socket: object): string | Buffer {
    this.turns.writing(socket, this.place);
    return super.toWritable(socket);
  }
}

/** A write that waits for replicas: where it was last written, and the WAIT owed there. */
export interface TrackedWrite {
  readonly turns: TurnWrites;
  readonly setting: WriteConfirmation;
  readonly place: WritePlace;
  turn: SentWait | undefined;
}

/** A write of `turns`'s client to track, waiting for `setting`, not written yet. */
export function trackWrite(turns: TurnWrites, setting: WriteConfirmation): TrackedWrite {
  return { turns, setting, place: { socket: undefined, at: 0 }, turn: undefined };
}

/**
 * Notes that `write` is being written on `socket` now (again, when ioredis sends it once
 * more after MOVED, ASK, TRYAGAIN or a reconnect), and takes the WAIT owed there.
 */
export function noteTracked(write: TrackedWrite, socket: object): void {
  write.turns.writing(socket, write.place);
  write.turn = write.turns.turnWait(socket, write.setting);
}

/**
 * A command of the service other than a script call or a WAIT (the embedded host's read
 * of a session, which every SuggestTask makes; the readiness PING; a session's SET): held
 * with its turn's others on the connection it is written to (`turns`,
 * `TurnWrites.writing`), as they are. A write that waits for replicas (`write`) notes
 * there where it is written each time it is: on its socket, or, inside a pipeline or a
 * MULTI, on the socket the pipeline's write goes to (written right after, in the same
 * turn).
 */
export class TurnCommand extends Command {
  constructor(
    private readonly turns: TurnWrites | undefined,
    name: string,
    args: (string | Buffer | number)[],
    options?: CommandOptions,
    private readonly write: TrackedWrite | undefined = undefined,
  ) {
    super(name, args, options);
  }

  override toWritable(stream: object): string | Buffer {
    if (this.write !== undefined) {
      const pipeline = stream as { isPipeline?: boolean; destination?: { redis?: Redis } };
      const socket = pipeline.isPipeline ? pipeline.destination?.redis?.stream : stream;
      if (socket !== undefined) noteTracked(this.write, socket);
    } else {
      this.turns?.writing(stream);
    }
    return super.toWritable(stream as never);
  }
}
