/**
 * Every Redis key and channel name the service uses, in one place.
 *
 * Each key of a session carries the Redis Cluster hash tag `{<session_id>}`, so that a
 * script that touches one session's keys stays on one slot. Ids reach this module only
 * after `domain/ids.ts` has checked them (1 to 128 of `[A-Za-z0-9._:-]`), so no caller's
 * text ever becomes a key unchecked.
 */

/** The keys of one session's suggestions. */
export interface SessionKeys {
  /** The append-only stream of `offered` and `settled` records: the source of truth. */
  readonly log: string;
  /**
   * A cache of the fold (counts, standings, offer order, and where each offer's records
   * are), rebuilt from `log` when missing or behind; the lists are read through it.
   */
  readonly projection: string;
  /**
   * The shard channel (SPUBLISH, in the session's slot) told after every change of this
   * session's list.
   */
  readonly changes: string;
}

/** The keys of one session's suggestions. */
export function sessionKeys(sessionId: string): SessionKeys {
  const tag = `{${sessionId}}`;
  return {
    log: `suggest:${tag}:log`,
    projection: `suggest:${tag}:proj`,
    changes: `suggest:${tag}:changes`,
  };
}

/** A match pattern (SCAN, never KEYS) for every session's log, and the session it names. */
export const SESSION_LOG_PATTERN = "suggest:{*}:log";

/** The session id of a key that `SESSION_LOG_PATTERN` matched; undefined for another key. */
export function sessionOfLogKey(key: string): string | undefined {
  const match = /^suggest:\{([^{}]+)\}:log$/.exec(key);
  return match?.[1];
}

/**
 * The keys of one workspace's inbox index (see store/workspace-inbox.ts): a cache of
 * which chats hold open offers of the workspace, deletable and rebuilt from the logs.
 * They carry the workspace's own hash tag `{ws:<id>}`, so no script ever touches them
 * together with a session's keys (test/store/cross-slot.test.ts). Workspace ids follow
 * the session id rule, checked before they reach this module.
 */
export interface WorkspaceKeys {
  /** Sorted set (every score 0, ordered by member): one `inboxMember` per open offer. */
  readonly offers: string;
  /** Hash: `seq` (the last token), `t:<session>` (its token), `m:<session>` (its members). */
  readonly chats: string;
  /** Set of sessions announced and not yet read back from their logs. */
  readonly pending: string;
  /** Hash: member → its offer's record as read from the log (JSON `[entry id, fields]`). */
  readonly docs: string;
  /**
   * The shard channel (in the workspace's slot) told after every change in a chat of
   * the workspace.
   */
  readonly changes: string;
}

/** The two parts around the workspace id in its `changes` channel. */
export const WORKSPACE_CHANNEL_PARTS = ["inbox:{ws:", "}:changes"] as const;

/**
 * The workspace channel's parts as an append of a chat carries them (lua/settle-3.lua,
 * withdraw-3.lua): the script publishes there itself when `inScript`, which only a
 * standalone Redis allows; on a cluster the workspace's channel lives in another slot, most
 * often on another node, where a script may not publish, so the parts are empty and the
 * caller tells the workspace once the append answered (`WorkspaceInbox.tell`).
 */
export function workspaceChannelParts(inScript: boolean): readonly [string, string] {
  return inScript ? WORKSPACE_CHANNEL_PARTS : ["", ""];
}

/** The keys of one workspace's inbox index. */
export function workspaceKeys(workspaceId: string): WorkspaceKeys {
  const tag = `{ws:${workspaceId}}`;
  return {
    offers: `inbox:${tag}:offers`,
    chats: `inbox:${tag}:chats`,
    pending: `inbox:${tag}:pending`,
    docs: `inbox:${tag}:docs`,
    changes: `${WORKSPACE_CHANNEL_PARTS[0]}${workspaceId}${WORKSPACE_CHANNEL_PARTS[1]}`,
  };
}

/** The single-flight lock of one Start of (session, suggestion). */
export function startLockKey(sessionId: string, suggestionId: string): string {
  return `suggest:{${sessionId}}:start:${suggestionId}`;
}

/**
 * The shard channel (in the session's slot) on which a Start's lock holder tells waiters how it ended (the
 * message is `<suggestion_id> <delivered|released>`), so that they wait without polling.
 */
export function startResultChannel(sessionId: string): string {
  return `suggest:{${sessionId}}:start-results`;
}

/** The embedded host's keys of one session or chat (chats and sessions share one id space). */
export interface HostKeys {
  /** The session as the host knows it (a serialized `Session`). */
  readonly session: string;
  /** The chat's title and origin, for chats the host created (a serialized `Chat` without messages). */
  readonly chat: string;
  /** The chat's messages, oldest first (serialized `ChatMessage`s). */
  readonly messages: string;
  /** Message ids already posted, for idempotent posts. */
  readonly messageIds: string;
}

/** The embedded host's keys of one session or chat. */
export function hostKeys(sessionId: string): HostKeys {
  const tag = `{${sessionId}}`;
  return {
    session: `host:${tag}:session`,
    chat: `host:${tag}:chat`,
    messages: `host:${tag}:messages`,
    messageIds: `host:${tag}:message-ids`,
  };
}
