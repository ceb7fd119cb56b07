import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys, workspaceKeys } from "../../server/store/keys.js";
import { runScript } from "../../server/store/run-script.js";
import type { ScriptReply } from "../../server/store/scripts.js";
import { uniqueId } from "./harness.js";

/** offer-3.lua's status codes, as its header numbers them. */
export const OFFER = { OK: 0, DUPLICATE: 1, LIFETIME: 2, OPEN: 3, TURN: 4, CHECKED: 5 } as const;

/** settle-3.lua's status codes, as its header numbers them. */
export const SETTLE = {
  RECORDED: 0,
  ALREADY: 1,
  NOT_FOUND: 2,
  NOT_OPEN: 3,
  OPEN_LIMIT: 4,
} as const;

/** One call of offer-3.lua; what is left out takes a value that passes every check. */
export interface OfferArgs {
  id: string;
  turn?: string;
  call?: string;
  title?: string;
  mode?: "append" | "check";
  lifetime?: number;
  open?: number;
  /** ARGV[10]: the chat's workspace ('' or left out: none). */
  workspace?: string;
  /** ARGV[11]: the inbox token of its announcement (default "1", above a fence of 0). */
  token?: string;
}

/**
 * A session of its own on `redis`, for the tests that call the session scripts directly
 * (test/store/lua-*.test.ts), through the service's one way to call a script
 * (store/run-script.ts `runScript`): its keys, offer-3.lua and settle-3.lua bound to them
 * with the ARGV of their headers, and the length of its log. One helper, so that every
 * such test writes the records the service writes.
 */
export function luaSession(redis: RedisClient) {
  const keys = sessionKeys(uniqueId("lua"));
  const offer = (a: OfferArgs): Promise<ScriptReply> =>
    runScript(
      redis,
      "offer",
      keys.log,
      keys.projection,
      keys.changes,
      a.id,
      a.turn ?? `turn-of-${a.id}`,
      a.call ?? "",
      a.title ?? `Title ${a.id}`,
      "Worth doing",
      "Do the follow-up.",
      a.mode ?? "append",
      String(a.lifetime ?? 10),
      String(a.open ?? 3),
      // The workspace's channel: '' on a cluster, where the writer tells it (another node).
      ...(a.workspace
        ? [a.workspace, a.token ?? "1", redis.isCluster ? "" : workspaceKeys(a.workspace).changes]
        : []),
    );
  const settle = (id: string, outcome: string, chat = "", open = 3): Promise<ScriptReply> =>
    runScript(
      redis,
      "settle",
      keys.log,
      keys.projection,
      keys.changes,
      id,
      outcome,
      chat,
      String(open),
    );
  const length = () => redis.xlen(keys.log);
  return { keys, offer, settle, length };
}
