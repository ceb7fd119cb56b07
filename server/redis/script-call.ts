import { hash } from "node:crypto";
import { Command } from "ioredis";
import { type RedisClient, turnsOf } from "./redis-client.js";
import { storeCondition } from "./store-condition.js";
import { type TurnWrites, UTF8_REPLY } from "./turn-waits.js";
import {
  confirmAfter,
  confirmation,
  notedLast,
  noteTracked,
  type TrackedWrite,
  trackedWrite,
  writeConfirmation,
} from "./write-confirm.js";

/** A script's argument as a command takes it. */
type Arg = string | Buffer | number;

const NO_ARGS: Arg[] = [];

/**
 * A script as this module sends it: its body, its SHA-1, and the connections (sockets)
 * it was sent on in full, so that each has it cached before an EVALSHA names it. Each
 * sending of the body marks its connection with a number of its own, so that of the
 * calls a NOSCRIPT refused together only those sent under the connection's current mark
 * clear it: once one of them has sent the body again, the others send the SHA.
 */
interface ScriptBody {
  readonly lua: string;
  readonly sha: string;
  /** As the command sends it. */
  readonly numberOfKeys: string;
  readonly sentOn: WeakMap<object, number>;
  marks: number;
  /** Whether its writes are records to confirm with replicas (`recordsWrites`). */
  readonly records: boolean;
}

/**
 * Whether a script's writes are records that replicas must confirm: every script but
 * those whose `#!lua` line says `no-writes` or `allow-oom`, and reads that write only
 * caches (`cacheOnly`: store/lua/readLists-2.lua, whose write-back no replica needs).
 */
export function recordsWrites(lua: string, cacheOnly = false): boolean {
  if (cacheOnly) return false;
  const flags = /^#!lua(?:[ \t]+flags=(\S*))?/.exec(lua)?.[1]?.split(",") ?? [];
  return !flags.includes("no-writes") && !flags.includes("allow-oom");
}

/**
 * One call of a script, its arguments taken as they are. ioredis's `Command` flattens
 * the arguments it is given with `Array.prototype.flat`, which V8 runs through its
 * generic path on Node 20: about 120 ns an argument, 1.8 µs for an offer's 14, nearly
 * all of what the constructor costs (docs/performance.md, "Choices the
 * figures rest on"). Every script call of the service passes its keys and
 * arguments flat already, so this command is built with none and given them after. The
 * rest is ioredis's script command: the first call on a connection sends the body
 * (EVAL), the next ones its SHA (EVALSHA), and a NOSCRIPT reply (the connection's Redis
 * lost its scripts) clears the connection's mark so that the call, sent again, sends the
 * body.
 */
class ScriptCall extends Command {
  #socket: object | undefined;
  #mark = 0;
  /** Its NOSCRIPT made it be sent again as another call, which confirms itself. */
  resent = false;
  /** Whether some argument is bytes (a Buffer). */
  readonly #bytes: boolean;

  constructor(
    readonly script: ScriptBody,
    rest: readonly Arg[],
    /** The writes of its client's connections, which hold it with its turn's others. */
    readonly turns: TurnWrites | undefined,
    /** Where it was last written, when its writes wait for replicas (write-confirm.ts). */
    readonly tracked: TrackedWrite | undefined,
    /** Sent in full whatever the connection's mark says (the last try after NOSCRIPTs). */
    readonly whole = false,
  ) {
    super("evalsha", NO_ARGS, UTF8_REPLY);
    this.args = [script.sha, script.numberOfKeys, ...rest];
    this.stringifyArguments();
    this.#bytes = rest.some((arg) => arg instanceof Buffer);
  }

  override toWritable(socket: object): string | Buffer {
    const { script } = this;
    const mark = script.sentOn.get(socket);
    this.#socket = socket;
    if (this.tracked !== undefined) noteTracked(this.tracked, socket);
    else this.turns?.writing(socket);
    if (mark === undefined || this.whole) {
      this.#mark = ++script.marks;
      script.sentOn.set(socket, this.#mark);
      this.name = "eval";
      this.args[0] = script.lua;
    } else {
      this.#mark = mark;
      if (this.name === "eval") {
        this.name = "evalsha";
        this.args[0] = script.sha;
      }
    }
    return this.#bytes
      ? withBytes(this.name, this.args as (string | Buffer)[])
      : super.toWritable(socket);
  }

  /** After a NOSCRIPT: the connection it was sent on lacks the script, unless sent again since. */
  forget(): void {
    const socket = this.#socket;
    if (socket !== undefined && this.script.sentOn.get(socket) === this.#mark) {
      this.script.sentOn.delete(socket);
    }
  }
}

/**
 * A command in RESP when some of its arguments are bytes: the bytes ioredis's
 * `toWritable` makes, in one buffer. ioredis gathers the parts and measures each string
 * twice (as it gathers them, and as it writes them), about 2.6 µs for a CreateChat's
 * nine arguments of which two are records, against 1 µs here, where the text between
 * two byte arguments is one string, measured and written once.
 */
function withBytes(name: string, args: readonly (string | Buffer)[]): Buffer {
  const parts: (string | Buffer)[] = [];
  let text = `*${args.length + 1}\r\n$${Buffer.byteLength(name)}\r\n${name}\r\n`;
  for (const arg of args) {
    if (typeof arg === "string") {
      text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    } else {
      parts.push(`${text}$${arg.length}\r\n`, arg);
      text = "\r\n";
    }
  }
  parts.push(text);
  const sizes: number[] = [];
  let total = 0;
  for (const part of parts) {
    const size = typeof part === "string" ? Buffer.byteLength(part) : part.length;
    sizes.push(size);
    total += size;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string | Buffer;
    const size = sizes[i] as number;
    if (typeof part === "string") out.write(part, at, size);
    else part.copy(out, at);
    at += size;
  }
  return out;
}

/**
 * Sends one call of `script` on `client`; should its Redis lack it, once more (the body
 * when no other call sent it since), and, lacking it again, a last time with the body.
 * A body may be refused before Redis caches it (out of memory refuses a writing script
 * whole), so that the calls that sent the SHA behind it meet NOSCRIPT again: the last
 * try gets Redis's own answer.
 */
function send(
  client: RedisClient,
  script: ScriptBody,
  rest: readonly Arg[],
  tries = 3,
): Promise<unknown> {
  const tracked = script.records ? trackedWrite(client) : undefined;
  const call = new ScriptCall(script, rest, turnsOf(client), tracked, tries === 1);
  call.promise = call.promise.catch((err: Error) => {
    if (!err.message.includes("NOSCRIPT")) {
      // Sent in full and refused (out of memory refuses a writing script before Redis
      // caches it): the next call sends the body again rather than a SHA Redis lacks.
      if (call.name === "eval") call.forget();
      storeCondition(client).failed(err);
      throw err;
    }
    call.forget();
    if (tries <= 1) throw err;
    call.resent = true;
    return send(client, script, rest, tries - 1);
  });
  const reply = client.sendCommand(call) as Promise<unknown>;
  if (call.tracked === undefined) return reply;
  // The WAIT its connection owes follows the script there (with the turn's writes, or,
  // while one is out, once that one answers).
  const confirm = confirmation(client, call.getSlot(), call.tracked);
  return reply.then(async (value) => {
    if (!call.resent) await confirm();
    return value;
  });
}

/** A script as `callScript` sends it: its command name and its body, SHA and per-connection marks. */
export interface FlatScript extends ScriptBody {
  readonly name: string;
}

/**
 * A script to send with `callScript`, once per process: its SHA is computed here, and
 * the connections it was sent on are noted in it as calls send it (its `#!lua` line and
 * `cacheOnly` say whether its writes are records replicas must confirm).
 */
export function flatScript(
  name: string,
  definition: { readonly lua: string; readonly numberOfKeys: number; readonly cacheOnly?: true },
): FlatScript {
  return {
    name,
    lua: definition.lua,
    sha: hash("sha1", definition.lua),
    numberOfKeys: String(definition.numberOfKeys),
    sentOn: new WeakMap(),
    marks: 0,
    records: recordsWrites(definition.lua, definition.cacheOnly),
  };
}

/**
 * Calls `script` on `client` with its keys then its arguments, flat: a `ScriptCall`
 * (EVALSHA, the body when the connection lacks it, NOSCRIPT sent again), whose writes
 * wait for replicas when the client's do (write-confirm.ts). A client with a `keyPrefix`
 * or `showFriendlyErrorStack` (options a `redis://` URL's query can set) gets the
 * command ioredis's `defineCommand` made under the script's name instead, which applies
 * them (in a pipeline that notes where it is written, when its writes wait for replicas).
 */
export function callScript(
  client: RedisClient,
  script: FlatScript,
  args: readonly Arg[],
): Promise<unknown> {
  if (client.options.keyPrefix || client.options.showFriendlyErrorStack) {
    return ioredisCall(client, script, args);
  }
  return send(client, script, args);
}

/** A method of a client or pipeline as ioredis's `defineCommand` makes it. */
type DefinedCommand = (this: unknown, ...args: readonly Arg[]) => unknown;

/** The command `defineCommand` made on `target` under `name`; throws when there is none. */
function definedCommand(target: object, name: string): DefinedCommand {
  const command = (target as Record<string, unknown>)[name];
  if (typeof command !== "function") throw new Error(`no script command ${name} on the client`);
  return command as DefinedCommand;
}

/**
 * ioredis's own script command, for a client with a `keyPrefix`: when the client's writes
 * wait for replicas, the call goes in a pipeline that notes where it is written
 * (`notedLast`), for the WAIT that must follow it.
 */
function ioredisCall(client: RedisClient, script: FlatScript, args: readonly Arg[]) {
  const { name } = script;
  if (!(writeConfirmation(client) && script.records)) {
    return definedCommand(client, name).apply(client, args as Arg[]) as Promise<unknown>;
  }
  const key = `${client.options.keyPrefix ?? ""}${String(args[0])}`;
  return confirmAfter(client, key, async (tracked) => {
    const pipeline = client.pipeline();
    definedCommand(pipeline, name).apply(pipeline, args as Arg[]);
    const [[err, value] = []] = (await notedLast(pipeline, tracked).exec()) ?? [];
    if (err) throw err;
    return value;
  });
}
