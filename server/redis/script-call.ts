import { hash } from "node:crypto";
import { Command } from "ioredis";
import type { RedisClient } from "./redis-client.js";
import { storeCondition } from "./store-condition.js";
import {
  confirmAfter,
  confirmation,
  notedLast,
  noteTracked,
  type TrackedWrite,
  trackWrite,
  writeConfirmation,
} from "./write-confirm.js";

/** A script's argument as a command takes it. */
type Arg = string | Buffer | number;

const NO_ARGS: Arg[] = [];
const UTF8_REPLY = Object.freeze({ replyEncoding: "utf8" as const });

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
  const setting = script.records ? writeConfirmation(client) : undefined;
  const call = new ScriptCall(script, rest, setting && trackWrite(setting), tries === 1);
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

/**
 * Makes the method `name` that `defineCommand` put on `client` send `ScriptCall`s: the
 * same script, the same reply (strings), without the flattening. Pipelines and MULTIs
 * copy the client's methods; on them the method is ioredis's own, which queues the
 * call there. The `<name>Buffer` method stays ioredis's. A client with a `keyPrefix` or
 * `showFriendlyErrorStack` (options a `redis://` URL's query can set) keeps ioredis's
 * method, which applies them.
 */
export function callScriptsFlat(
  client: RedisClient,
  name: string,
  definition: { readonly lua: string; readonly numberOfKeys: number; readonly cacheOnly?: true },
): void {
  const records = recordsWrites(definition.lua, definition.cacheOnly);
  if (client.options.keyPrefix || client.options.showFriendlyErrorStack) {
    if (writeConfirmation(client) && records) {
      confirmIoredisCalls(client, name);
    }
    return;
  }
  const script: ScriptBody = {
    lua: definition.lua,
    sha: hash("sha1", definition.lua),
    numberOfKeys: String(definition.numberOfKeys),
    sentOn: new WeakMap(),
    marks: 0,
    records,
  };
  onClientItself(client, name, (_, args) => send(client, script, args as Arg[]));
}

/**
 * ioredis's own script method, kept for a client with a `keyPrefix`, when the client's
 * writes wait for replicas: the call goes in a pipeline that notes where it is written
 * (`notedLast`), for the WAIT that must follow it.
 */
function confirmIoredisCalls(client: RedisClient, name: string): void {
  onClientItself(client, name, (_, args) => {
    const key = `${client.options.keyPrefix ?? ""}${String(args[0])}`;
    return confirmAfter(client, key, async (tracked) => {
      const pipeline = client.pipeline();
      (pipeline as unknown as Record<string, ClientMethod>)[name]?.apply(pipeline, args);
      const [[err, value] = []] = (await notedLast(pipeline, tracked).exec()) ?? [];
      if (err) throw err;
      return value;
    });
  });
}

/** A method of a client, as ioredis's `defineCommand` makes it. */
export type ClientMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Replaces the method `name` of `client` for calls on the client itself with `call`,
 * which is given the method it replaces. ioredis copies a client's methods onto every
 * pipeline and MULTI; called there, the method is the one replaced, which queues the
 * command in the pipeline and answers the pipeline. Throws when the client has no such
 * method (a script that was not defined).
 */
export function onClientItself(
  client: RedisClient,
  name: string,
  call: (replaced: ClientMethod, args: unknown[]) => unknown,
): void {
  const target = client as unknown as Record<string, ClientMethod>;
  const replaced = target[name];
  if (typeof replaced !== "function") throw new Error(`no script command ${name} on the client`);
  target[name] = function onClient(this: unknown, ...args: unknown[]) {
    if (this !== client) return replaced.apply(this, args);
    return call(replaced, args);
  };
}
