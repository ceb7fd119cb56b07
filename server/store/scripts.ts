import { readdirSync, readFileSync } from "node:fs";
import type { ClientContext, Cluster, Redis, Result } from "ioredis";
import { connectRedis, type RedisAccess, type RedisClient } from "../redis/redis-client.js";
import { confirmWrites, type WriteConfirmation } from "../redis/write-confirm.js";

/** A line that inlines `includes/<name>.lua` in its place. */
const INCLUDE = /^--- @include "([a-z-]+)"$/gm;

/** Where the `.lua` files live, beside this module in the source tree and in `dist/`. */
const LUA_DIR = new URL("./lua/", import.meta.url);

/** One script: its command name, its number of keys and its body with includes inlined. */
export interface ScriptSource {
  readonly name: string;
  readonly numberOfKeys: number;
  readonly lua: string;
  /**
   * A read that writes only caches (a `--- @cache-only` line in its own file): its writes
   * are no records, which replicas need not confirm (redis/script-call.ts).
   */
  readonly cacheOnly?: true;
}

/**
 * Reads every `<name>-<numKeys>.lua` file of `dir` (default `lua/`, the folder tests may
 * replace) and inlines its `--- @include "<file>"` lines from `<dir>/includes/`, as
 * bullmq does, so that shared fold code is written once (an include may include others,
 * as includes/projection.lua gathers the projection's parts); a `--- @script "<name>-<n>"`
 * line inlines another script's whole text (a script that runs it after checks of its
 * own, as settleAndRead-3.lua runs settle-3.lua). Each file is one script, called one
 * way; a `--- @cache-only` line marks a read that writes only caches (read in the
 * file's own text, not in the scripts it inlines). Any other `.lua` name throws.
 */
export function loadScripts(dir: URL = LUA_DIR): readonly ScriptSource[] {
  const include = (name: string, depth: number): string => {
    if (depth > 4) throw new Error("includes include each other more than 4 deep");
    const text = readFileSync(new URL(`includes/${name}.lua`, dir), "utf8");
    return text.replace(INCLUDE, (_, inner: string) => include(inner, depth + 1));
  };
  const inline = (text: string) =>
    inlineScripts(text, dir).replace(INCLUDE, (_, name: string) => include(name, 0));
  return readdirSync(dir)
    .filter((file) => file.endsWith(".lua"))
    .map((file) => {
      const match = /^([a-zA-Z]+)-(\d+)\.lua$/.exec(file);
      if (!match) throw new Error(`script file ${file} is not named <name>-<numKeys>.lua`);
      const text = readFileSync(new URL(file, dir), "utf8");
      return {
        name: match[1] as string,
        numberOfKeys: Number(match[2]),
        lua: inline(text),
        ...(/^--- @cache-only$/m.test(text) ? { cacheOnly: true } : {}),
      };
    });
}

/**
 * A script's first line: `#!lua`, with `flags=no-writes` for a script that writes
 * nothing, and no flags for any script that writes, records or only caches: Redis 7
 * then checks memory (OOM), the disk (MISCONF) and min-replicas before the script runs,
 * and refuses it whole, where a script without the line is checked at each write inside
 * it and could stop halfway. A read refused so is answered from the log alone
 * (store/log-reads.ts; test/e2e/out-of-memory.test.ts).
 */
const SHEBANG = /^#!lua(?:[ \t]+flags=[a-z,-]*)?\n/;

/** A script's `#!lua` line and the rest. */
function splitShebang(lua: string): [string, string] {
  const line = SHEBANG.exec(lua)?.[0] ?? "";
  return [line.trimEnd(), lua.slice(line.length)];
}

/**
 * `text` with its `--- @script` lines replaced by those scripts' texts (without their
 * `#!lua` line, which only the first line may hold), theirs too.
 */
function inlineScripts(text: string, dir: URL, depth = 0): string {
  if (depth > 4) throw new Error("scripts inline each other more than 4 deep");
  return text.replace(/^--- @script "([a-zA-Z]+-\d+)"$/gm, (_, name: string) => {
    const inlined = readFileSync(new URL(`${name}.lua`, dir), "utf8");
    return inlineScripts(splitShebang(inlined)[1], dir, depth + 1);
  });
}

let cached: readonly ScriptSource[] | undefined;

/**
 * A client of the Redis that `url` names with every script of the service defined on
 * it: what the service, the tests and the bench use. With `confirmation`, each write
 * waits for that many replicas (redis/write-confirm.ts); `access` holds the sentinels'
 * credentials and the TLS options (redis-client.ts `RedisAccess`).
 */
export function createRedisClient(
  url: string,
  confirmation?: WriteConfirmation,
  access?: RedisAccess,
): RedisClient {
  const client = connectRedis(url, access);
  if (confirmation !== undefined) confirmWrites(client, confirmation);
  defineScripts(client);
  return client;
}

/** The service's scripts, read once per process (`loadScripts`). */
export function serviceScripts(): readonly ScriptSource[] {
  cached ??= loadScripts();
  return cached;
}

/**
 * Registers every script on a client with ioredis's `defineCommand`, once per client:
 * the typed commands of pipelines and MULTIs (`ScriptCommands`), and of a client with a
 * `keyPrefix` (redis/script-call.ts `callScript`). A call on the client itself goes
 * through `runScript` (store/run-script.ts).
 */
export function defineScripts(client: Redis | Cluster): void {
  for (const script of serviceScripts()) {
    client.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  }
}

/** A script's raw reply: Redis arrays of strings, numbers and nested arrays. */
export type ScriptReply = (string | number | null | ScriptReply)[];

/**
 * Every script's command, its keys then its arguments and its reply: what `runScript`
 * takes for each name (store/run-script.ts), and, merged into ioredis's
 * `RedisCommander`, the command `defineCommand` made on every client, pipeline and MULTI.
 */
export interface ScriptCommands<Context extends ClientContext = { type: "default" }> {
  /** lua/offer-3.lua */
  offer(
    log: string,
    projection: string,
    changes: string,
    ...argv: string[]
  ): Result<ScriptReply, Context>;
  /** lua/settleAndRead-3.lua: `{ settle-3.lua's reply, readSuggestion-2.lua's reply }`. */
  settleAndRead(
    log: string,
    projection: string,
    changes: string,
    ...argv: string[]
  ): Result<[ScriptReply, ScriptReply], Context>;
  /** lua/settle-3.lua */
  settle(
    log: string,
    projection: string,
    changes: string,
    ...argv: string[]
  ): Result<ScriptReply, Context>;
  /** lua/withdraw-3.lua: `{ status, offer, settlement }`. */
  withdraw(
    log: string,
    projection: string,
    changes: string,
    ...argv: string[]
  ): Result<ScriptReply, Context>;
  /** lua/settlements-2.lua: `{ offers, settlements }`. */
  settlements(log: string, projection: string, after: string): Result<ScriptReply, Context>;
  /** lua/announce-2.lua: the chat's new inbox token. */
  announce(chats: string, pending: string, ...argv: string[]): Result<number, Context>;
  /** lua/inboxPage-4.lua: `{ pending, members, docs }`. */
  inboxPage(
    offers: string,
    chats: string,
    pending: string,
    docs: string,
    ...argv: string[]
  ): Result<ScriptReply, Context>;
  /** lua/inboxPut-4.lua: 1 written, 0 not. */
  inboxPut(
    offers: string,
    chats: string,
    pending: string,
    docs: string,
    ...argv: string[]
  ): Result<number, Context>;
  /** lua/inboxChat-2.lua: `{ position, offer, ... }`. */
  inboxChat(log: string, projection: string, ...argv: string[]): Result<ScriptReply, Context>;
  /** lua/readLists-2.lua: `{ version, offer, settlement, ... }`, or `{ version }` when `have`. */
  readLists(log: string, projection: string, have?: string): Result<ScriptReply, Context>;
  /** lua/readSuggestion-2.lua: `{ version, offer, settlement }`, or `{ version }` when `have`. */
  readSuggestion(
    log: string,
    projection: string,
    suggestionId: string,
    have: string,
  ): Result<ScriptReply, Context>;
  /**
   * lua/beginStart-4.lua: `{ session record in hex, taken, readSuggestion-2.lua's reply,
   * the fixed options' record fields, the stream id of the starting record appended now }`.
   */
  beginStart(
    log: string,
    projection: string,
    lock: string,
    hostSession: string,
    ...argv: string[]
  ): Result<[string, number, ScriptReply, string[], string?], Context>;
  /** lua/abandonStart-4.lua: `{ abandoned, released }`, each 1 or 0. */
  abandonStart(
    log: string,
    projection: string,
    lock: string,
    channel: string,
    ...argv: string[]
  ): Result<[number, number], Context>;
  /** lua/settleStart-5.lua: `{ settle-3.lua's reply, readSuggestion-2.lua's reply, held }`. */
  settleStart(
    log: string,
    projection: string,
    changes: string,
    lock: string,
    channel: string,
    ...argv: string[]
  ): Result<[ScriptReply, ScriptReply, number], Context>;
  /** lua/extendLock-1.lua: 1 when the caller still holds the lock. */
  extendLock(lock: string, token: string, ttlMs: string): Result<number, Context>;
  /** lua/releaseLock-2.lua: 1 when the caller held the lock. */
  releaseLock(
    lock: string,
    channel: string,
    token: string,
    message: string,
  ): Result<number, Context>;
  /** lua/createChat-2.lua: 1 created, 0 existed. */
  createChat(
    chat: string,
    session: string,
    chatBytes: Buffer,
    sessionBytes: Buffer,
    retentionMs?: string,
  ): Result<number, Context>;
  /** lua/postMessage-3.lua: 0 posted, 1 already posted, 2 no such chat. */
  postMessage(
    session: string,
    messageIds: string,
    messages: string,
    messageId: string,
    messageBytes: Buffer,
    retentionMs?: string,
  ): Result<number, Context>;
  /** lua/forgetChat-17.lua: `{ status, workspaces, ids }`. */
  forgetChat(...keysAndArgs: string[]): Result<ScriptReply, Context>;
  /** lua/inboxForget-4.lua: 1 when the index held something of the chat. */
  inboxForget(
    offers: string,
    chats: string,
    pending: string,
    docs: string,
    session: string,
    channel: string,
  ): Result<number, Context>;
}

declare module "ioredis" {
  interface RedisCommander<Context> extends ScriptCommands<Context> {}
}
