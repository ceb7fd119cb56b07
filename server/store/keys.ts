/**
 * Every Redis key and channel name the service uses, in one place.
 *
 * Each key of a session carries the Redis Cluster hash tag `{<session_id>}`, so that a
 * script that touches one session's keys stays on one slot. Ids reach this module only
 * after `validate.ts` has checked them (1 to 128 of `[A-Za-z0-9._:-]`), so no caller's
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
  /** The pub/sub channel told after every change of this session's list. */
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

/** The single-flight lock of one Start of (session, suggestion). */
export function startLockKey(sessionId: string, suggestionId: string): string {
  return `suggest:{${sessionId}}:start:${suggestionId}`;
}

/**
 * The pub/sub channel on which a Start's lock holder tells waiters how it ended (the
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
