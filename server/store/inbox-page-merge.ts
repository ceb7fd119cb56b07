import { sessionOfMember } from "../domain/inbox-page.js";
import type { InboxEntries, InboxEntry, InboxPage } from "./inbox-entries.js";
import type { ScriptReply } from "./scripts.js";

/** Pairs `{ session, token, ... }` of a script reply as a map. */
function tokenMap(flat: ScriptReply[number]): Map<string, string> {
  const map = new Map<string, string>();
  const items = Array.isArray(flat) ? flat : [];
  for (let i = 0; i + 1 < items.length; i += 2) map.set(String(items[i]), String(items[i + 1]));
  return map;
}

/** What a page is asked for: the workspace, the page's size, the member to read after. */
export interface PageAsked {
  readonly workspaceId: string;
  readonly size: number;
  readonly after: string;
}

/** Where `mergePage` reads the chats the index alone cannot answer for. */
export interface PageSources {
  /** Reads a pending chat back from its log, fenced at `token`, into the index. */
  resolve(workspaceId: string, sessionId: string, token: string): Promise<InboxEntry[]>;
  /** The chat's open offers of the workspace, from its log, unfenced. */
  chatEntries(sessionId: string, workspaceId: string): Promise<InboxEntry[]>;
  /** The entries made from the index's records. */
  readonly entries: InboxEntries;
}

/**
 * The page a reply of lua/inboxPage-4.lua (pending chats, the window, its records) makes:
 * the window's entries from the index's records, each pending chat read back from its log
 * (fenced) and merged in where it falls in the window, and a chat whose record is missing
 * from the index (deleted by hand) read from its log. A page may hold fewer than `size`
 * while more follow (a pending chat lost members); `next` says where to go on. Apart from
 * the inbox's protocol (store/workspace-inbox.ts) because it is the order's arithmetic.
 */
export async function mergePage(
  asked: PageAsked,
  reply: ScriptReply,
  sources: PageSources,
): Promise<InboxPage> {
  const { workspaceId, size, after } = asked;
  const pending = tokenMap(reply[0]);
  const window = reply[1] as string[];
  const docs = reply[2] as (string | null)[];
  const full = window.length === size;
  const boundary = window.at(-1) ?? "";
  const fromPending = await Promise.all(
    [...pending].map(([sessionId, token]) => sources.resolve(workspaceId, sessionId, token)),
  );
  const unread = new Set<string>();
  const listed: InboxEntry[] = [];
  window.forEach((member, i) => {
    const sessionId = sessionOfMember(member);
    const doc = docs[i];
    if (pending.has(sessionId)) return;
    if (typeof doc !== "string") unread.add(sessionId);
    else listed.push(sources.entries.of(sessionId, member, doc));
  });
  // A record missing from the index (deleted by hand): its chat's members of the
  // window are read from the chat's log, all of them, each once.
  const fromLogs = await Promise.all(
    [...unread].map((sessionId) => sources.chatEntries(sessionId, workspaceId)),
  );
  const inWindow = new Set(window);
  const candidates = [
    ...listed.filter((e) => !unread.has(e.suggestion.sessionId)),
    ...fromLogs.flat().filter((e) => inWindow.has(e.member)),
    ...fromPending
      .flat()
      .filter((e) => (after === "" || e.member < after) && (!full || e.member >= boundary)),
  ].sort((a, b) => (a.member < b.member ? 1 : a.member > b.member ? -1 : 0));
  const entries = candidates.slice(0, size);
  const more = full || candidates.length > size;
  const next = !more ? "" : entries.length === size ? (entries.at(-1)?.member ?? "") : boundary;
  return { entries, next };
}
