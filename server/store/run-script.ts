import type { RedisClient } from "../redis/redis-client.js";
import { callScript, type FlatScript, flatScript } from "../redis/script-call.js";
import { type ClientSpanSpec, inClientSpan, scriptSpan } from "./script-spans.js";
import { type ScriptCommands, serviceScripts } from "./scripts.js";

/** The name of one of the service's scripts (`lua/<name>-<numKeys>.lua`). */
export type ScriptName = keyof ScriptCommands;

/** A script made ready to call: how it is sent, and its span. */
interface Runnable {
  readonly script: FlatScript;
  readonly span: ClientSpanSpec;
}

/**
 * Every script of the service ready to call, read once as the module loads. Each
 * script notes in itself the connections it was sent on (redis/script-call.ts), which
 * is the same for every client: a connection is one client's.
 */
const RUNNABLES: ReadonlyMap<string, Runnable> = new Map(
  serviceScripts().map((source) => [
    source.name,
    { script: flatScript(source.name, source), span: scriptSpan(source.name) },
  ]),
);

/** The script `name` ready to call; throws for a name the service has no script of. */
function runnable(name: string): Runnable {
  const found = RUNNABLES.get(name);
  if (found === undefined) throw new Error(`no script command ${name} on the client`);
  return found;
}

/**
 * Calls the script `name` on `client` with its keys then its arguments, and answers its
 * reply: the one way the service calls a script outside a pipeline or MULTI. In a client
 * span `redis <name>` (store/script-spans.ts), it is sent flat (redis/script-call.ts
 * `callScript`: EVALSHA, the body when the connection lacks it, NOSCRIPT sent again), and,
 * when the client's writes wait for replicas and the script writes records (not a
 * `--- @cache-only` read), answers once they confirmed it (redis/write-confirm.ts).
 */
export function runScript<N extends ScriptName>(
  client: RedisClient,
  name: N,
  ...keysAndArgs: Parameters<ScriptCommands[N]>
): ReturnType<ScriptCommands[N]> {
  const { script, span } = runnable(name);
  return inClientSpan(span, () =>
    callScript(client, script, keysAndArgs as readonly (string | Buffer | number)[]),
  ) as ReturnType<ScriptCommands[N]>;
}
