import { Cluster, type Redis } from "ioredis";
import { isValidId } from "../domain/ids.js";
import { SESSION_LOG_PATTERN, sessionOfLogKey } from "./keys.js";
import { WorkspaceInbox } from "./workspace-inbox.js";

/** What a rebuild did. */
export interface RebuildReport {
  /** Session logs found by SCAN. */
  readonly chats: number;
  /** (workspace, chat) pairs with open offers written into an index. */
  readonly announced: number;
}

/**
 * Recreates the workspace inbox indexes from the session logs, for when they were
 * deleted (they are a cache): SCAN (never KEYS) over every primary for session logs,
 * and for each chat with open offers of a workspace, the same two steps an offer takes
 * and a read finishes: announce, then read back with a fence and write
 * (`WorkspaceInbox.resolve`). Safe while the service runs: offers and settlements made
 * meanwhile go through the same protocol. O(keys in Redis): an operator's command
 * (`node dist/server/main.js rebuild-inbox`), not a request path. The embedded host
 * keeps no per-workspace list of sessions, and a remote host cannot be asked for one,
 * so the logs are the only complete list. Pinned by test/store/inbox-rebuild.test.ts.
 */
export async function rebuildInboxes(
  redis: Redis | Cluster,
  options: { readonly scanCount?: number } = {},
): Promise<RebuildReport> {
  const inbox = new WorkspaceInbox(redis);
  const nodes = redis instanceof Cluster ? redis.nodes("master") : [redis];
  let chats = 0;
  let announced = 0;
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(
        cursor,
        "MATCH",
        SESSION_LOG_PATTERN,
        "COUNT",
        options.scanCount ?? 1_000,
      );
      cursor = next;
      const sessions = keys.flatMap((key) => sessionOfLogKey(key) ?? []);
      chats += sessions.length;
      const counts = await Promise.all(sessions.map((s) => rebuildChat(inbox, s)));
      announced += counts.reduce((a, b) => a + b, 0);
    } while (cursor !== "0");
  }
  return { chats, announced };
}

/** Writes one chat into the index of every workspace it has open offers of. */
export async function rebuildChat(inbox: WorkspaceInbox, sessionId: string): Promise<number> {
  const open = await inbox.chatEntries(sessionId, "*");
  const workspaces = new Set(open.map((e) => e.suggestion.workspaceId).filter(isValidId));
  for (const workspaceId of workspaces) {
    const token = await inbox.announce(workspaceId, sessionId);
    await inbox.resolve(workspaceId, sessionId, String(token));
  }
  return workspaces.size;
}
