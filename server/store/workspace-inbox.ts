import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Cluster, Redis } from "ioredis";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { offeredSuggestion, parseEntries } from "../domain/fold.js";
import { inboxMember, sessionOfMember } from "../domain/inbox-page.js";
import { sessionKeys, workspaceKeys } from "./keys.js";
import type { ScriptReply } from "./scripts.js";

/** One open offer as the inbox lists it: its place in the order and the suggestion. */
export interface InboxEntry {
  readonly member: string;
  readonly suggestion: Suggestion;
}

/** One page of a workspace's inbox. */
export interface InboxPage {
  /** Open suggestions, newest offer first. */
  readonly entries: InboxEntry[];
  /** The member to read on after; empty when there is nothing after this page. */
  readonly next: string;
}

/** Pairs `{ session, token, ... }` of a script reply as a map. */
function tokenMap(flat: ScriptReply[number]): Map<string, string> {
  const map = new Map<string, string>();
  const items = Array.isArray(flat) ? flat : [];
  for (let i = 0; i + 1 < items.length; i += 2) map.set(String(items[i]), String(items[i + 1]));
  return map;
}

/**
 * A workspace's inbox: the open suggestions of every chat of the workspace, newest offer
 * first. Each chat's log stays the only truth; the index on the workspace's own hash tag
 * (keys.ts `workspaceKeys`) only says where to look and in which order:
 * - before an offer or a restore is appended, its chat is announced (lua/announce-2.lua):
 *   marked pending, with a new token that the append carries;
 * - a read reads every pending chat back from its log with a fence at its token
 *   (lua/inboxChat-2.lua: an append announced at or below the fence and not yet made is
 *   refused and announced again), writes the chat's open offers into the index and
 *   clears the mark (lua/inboxPut-3.lua, only if no announcement came meanwhile);
 * - every other chat on the page is read back too (unfenced), so a settled offer leaves
 *   the page, and the index, at once.
 * So a crash between any two steps leaves at worst a pending chat or a settled member,
 * both found by the next read; the index never lacks an open offer. No script touches a
 * session's keys and the index together. Pinned by test/store/inbox-model.test.ts.
 */
export class WorkspaceInbox {
  constructor(readonly redis: Redis | Cluster) {}

  /** Marks the chat pending in the workspace; answers its new token (at least `minimum`). */
  async announce(workspaceId: string, sessionId: string, minimum = 0): Promise<number> {
    const keys = workspaceKeys(workspaceId);
    return Number(await this.redis.announce(keys.chats, keys.pending, sessionId, String(minimum)));
  }

  /**
   * The chat's open offers of the workspace, from its log; with `fence`, fenced at that
   * token first (in the same script).
   */
  async chatEntries(sessionId: string, workspaceId: string, fence = ""): Promise<InboxEntry[]> {
    return (await this.#readChat(sessionId, workspaceId, fence)).entries;
  }

  async #readChat(sessionId: string, workspaceId: string, fence: string) {
    const keys = sessionKeys(sessionId);
    const reply = await this.redis.inboxChat(keys.log, keys.projection, workspaceId, fence);
    const entries: InboxEntry[] = [];
    for (let i = 1; i + 1 < reply.length; i += 2) {
      const raw = reply[i + 1] as [string, string[]];
      const [record] = parseEntries([raw]);
      if (record === undefined) continue;
      const suggestion = offeredSuggestion(sessionId, record);
      const at = suggestion.offeredAt === undefined ? 0 : timestampMs(suggestion.offeredAt);
      entries.push({ member: inboxMember(at, sessionId, Number(reply[i])), suggestion });
    }
    return { logged: reply[0] === 1, entries };
  }

  /** Makes the chat's members `entries` if its token is still `token`; `clear` ends pending. */
  async put(
    workspaceId: string,
    sessionId: string,
    token: string,
    clear: boolean,
    entries: readonly InboxEntry[],
  ): Promise<boolean> {
    const keys = workspaceKeys(workspaceId);
    const members = entries.map((e) => e.member);
    const written = await this.redis.inboxPut(
      keys.offers,
      keys.chats,
      keys.pending,
      sessionId,
      token,
      clear ? "1" : "0",
      ...members,
    );
    return written === 1;
  }

  /**
   * Reads a pending chat back with a fence at `token` and writes it into the index. A
   * chat with an empty log stays pending (no fence is taken there, see
   * lua/inboxChat-2.lua), until its first record.
   */
  async resolve(workspaceId: string, sessionId: string, token: string): Promise<InboxEntry[]> {
    const { logged, entries } = await this.#readChat(sessionId, workspaceId, token);
    await this.put(workspaceId, sessionId, token, logged, entries);
    return entries;
  }

  /**
   * Up to `size` open suggestions after `after` ('' from the newest), newest offer
   * first, each read from its chat's log. A page may hold fewer than `size` while more
   * follow (members of offers settled since were dropped); `next` says where to go on.
   */
  async page(workspaceId: string, size: number, after: string): Promise<InboxPage> {
    const keys = workspaceKeys(workspaceId);
    const reply = await this.redis.inboxPage(
      keys.offers,
      keys.chats,
      keys.pending,
      after,
      String(size),
    );
    const pending = tokenMap(reply[0]);
    const members = (reply[1] as string[]).filter((m) => !pending.has(sessionOfMember(m)));
    const tokens = tokenMap(reply[2]);
    const full = (reply[1] as string[]).length === size;
    const boundary = (reply[1] as string[]).at(-1) ?? "";

    const fromPending = await Promise.all(
      [...pending].map(([sessionId, token]) => this.resolve(workspaceId, sessionId, token)),
    );
    const valid = await this.#validate(workspaceId, members, tokens);
    const candidates = [
      ...valid,
      ...fromPending
        .flat()
        .filter((e) => (after === "" || e.member < after) && (!full || e.member >= boundary)),
    ].sort((a, b) => (a.member < b.member ? 1 : a.member > b.member ? -1 : 0));
    const entries = candidates.slice(0, size);
    const more = full || candidates.length > size;
    const next = !more ? "" : entries.length === size ? (entries.at(-1)?.member ?? "") : boundary;
    return { entries, next };
  }

  /**
   * The window's members whose offers are still open, read from their chats' logs; a
   * chat whose members include a settled offer gets its members written anew (only if
   * no announcement came since its token was read).
   */
  async #validate(
    workspaceId: string,
    members: readonly string[],
    tokens: ReadonlyMap<string, string>,
  ): Promise<InboxEntry[]> {
    const bySession = new Map<string, string[]>();
    for (const member of members) {
      const sessionId = sessionOfMember(member);
      const list = bySession.get(sessionId) ?? [];
      list.push(member);
      bySession.set(sessionId, list);
    }
    const valid: InboxEntry[] = [];
    await Promise.all(
      [...bySession].map(async ([sessionId, listed]) => {
        const open = await this.chatEntries(sessionId, workspaceId);
        const byMember = new Map(open.map((e) => [e.member, e]));
        let stale = false;
        for (const member of listed) {
          const entry = byMember.get(member);
          if (entry === undefined) stale = true;
          else valid.push(entry);
        }
        if (stale) {
          await this.put(workspaceId, sessionId, tokens.get(sessionId) ?? "0", false, open);
        }
      }),
    );
    return valid;
  }
}

/** What an append that carries an inbox token answers when a read fenced the token. */
export interface Fenced {
  readonly fenced: number;
}

/**
 * Runs `append` with a token announced for (workspace, session) first; when the append
 * answers fenced (an inbox read passed the token), announces again above the fence and
 * repeats. Without a workspace the append runs with no token.
 */
export async function announced<T>(
  inbox: WorkspaceInbox,
  workspaceId: string,
  sessionId: string,
  append: (token: string) => Promise<T | Fenced>,
): Promise<T> {
  if (workspaceId === "") return (await append("")) as T;
  let minimum = 0;
  for (let attempt = 0; ; attempt++) {
    const token = await inbox.announce(workspaceId, sessionId, minimum);
    const outcome = await append(String(token));
    if (!isFenced(outcome)) return outcome;
    if (attempt >= 10) throw new Error("the inbox fenced every announcement of this chat");
    minimum = outcome.fenced + 1;
  }
}

function isFenced(value: unknown): value is Fenced {
  return typeof value === "object" && value !== null && "fenced" in value;
}
