import type { Cluster, Redis } from "ioredis";
import { LIFETIME_LIMIT } from "../domain/limits.js";
import { rebuildChat } from "./inbox-rebuild.js";
import { hostKeys, sessionKeys, startLockKey, workspaceKeys } from "./keys.js";
import { runScript } from "./run-script.js";
import type { WorkspaceInbox } from "./workspace-inbox.js";

/**
 * The start locks lua/forgetChat-17.lua takes as keys (its 17 less 7): one per offer a
 * chat may make in its lifetime, so that a chat the service wrote is erased in one step
 * with its locks. A log of more offers (written around the service) has the rest of its
 * locks deleted right after.
 */
export const ERASED_LOCK_KEYS = 10;
if (ERASED_LOCK_KEYS < LIFETIME_LIMIT) throw new Error("forgetChat-17.lua has too few lock keys");

/** The status codes of lua/forgetChat-17.lua. */
enum ForgetStatus {
  Erased = 0,
  Locks = 1,
}

/** What an erasure found of the chat. */
export interface ErasureReport {
  /** The workspaces whose inbox indexes the chat's offers were listed in. */
  readonly workspaces: readonly string[];
}

/**
 * Erases a chat's suggestions (DeleteSuggestions), so that no key or value in Redis holds
 * its id or any of its text:
 * 1. on the chat's slot, one atomic script (lua/forgetChat-17.lua): the log, the
 *    projection, the start locks of its offers and the embedded host's records of the
 *    session. It reads the offers' ids from the log, and asks again for the lock keys
 *    of offers it was not given (an offer that came meanwhile), erasing nothing then;
 * 2. on each workspace's slot that the log's offers named, its inbox index forgets the
 *    chat (lua/inboxForget-4.lua): members, records, token and pending mark;
 * 3. a write that landed after step 1 made the chat anew (it reads as one that never
 *    offered anything before): if its announcement was taken away by step 2, the chat
 *    is put back into the index of its open offers' workspaces, as a rebuild does.
 * A chat's keys and its workspaces' are in different slots of a cluster, so steps 1 and
 * 2 cannot be one; between them an inbox read may still list the erased offers, never
 * after the call returns. Repeated, it finds nothing and answers the same. A chat
 * started from one of the chat's suggestions is a chat of its own and stays.
 * Pinned by test/rpc/delete-suggestions.test.ts and test/rpc/delete-suggestions-race.test.ts.
 */
export async function eraseChat(
  redis: Redis | Cluster,
  inbox: WorkspaceInbox,
  sessionId: string,
): Promise<ErasureReport> {
  const keys = sessionKeys(sessionId);
  const host = hostKeys(sessionId);
  let ids: string[] = [];
  for (let attempt = 0; ; attempt++) {
    const given = ids.slice(0, ERASED_LOCK_KEYS);
    const locks = given.map((id) => startLockKey(sessionId, id));
    // Unused lock keys repeat the first (the empty id's when none: never a lock).
    const first = locks[0] ?? startLockKey(sessionId, "");
    while (locks.length < ERASED_LOCK_KEYS) locks.push(first);
    const reply = await runScript(
      redis,
      "forgetChat",
      keys.log,
      keys.projection,
      keys.changes,
      host.session,
      host.chat,
      host.messages,
      host.messageIds,
      ...locks,
      given.join(" "),
    );
    const named = (reply[2] ?? []) as string[];
    if (reply[0] === ForgetStatus.Locks) {
      if (attempt >= 10) throw new Error("the chat gained offers through every erasure try");
      ids = [...ids, ...named];
      continue;
    }
    if (reply[0] !== ForgetStatus.Erased) {
      throw new Error(`forgetChat answered an unknown status ${String(reply[0])}`);
    }
    // A log of more offers than lock keys (written around the service): their locks now.
    if (named.length > 0) await redis.del(...named.map((id) => startLockKey(sessionId, id)));
    const workspaces = (reply[1] ?? []) as string[];
    for (const workspaceId of workspaces) {
      const ws = workspaceKeys(workspaceId);
      await runScript(
        redis,
        "inboxForget",
        ws.offers,
        ws.chats,
        ws.pending,
        ws.docs,
        sessionId,
        ws.changes,
      );
    }
    // Read back into every workspace of its open offers, not only those erased.
    if ((await redis.exists(keys.log)) === 1) await rebuildChat(inbox, sessionId);
    return { workspaces };
  }
}
