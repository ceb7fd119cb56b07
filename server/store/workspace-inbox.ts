import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Cluster, Redis } from "ioredis";
import { offeredSuggestion, parseEntries } from "../domain/fold.js";
import { inboxMember } from "../domain/inbox-page.js";
import { InboxEntries, type InboxEntry, type InboxPage, KeptPages } from "./inbox-entries.js";
import { mergePage } from "./inbox-page-merge.js";
import type { InboxToken } from "./inbox-token.js";
import { sessionKeys, workspaceChannelParts, workspaceKeys } from "./keys.js";
import { openOffersOf, orFromLog, type PlacedOffer, readWholeLog } from "./log-reads.js";
import { runScript } from "./run-script.js";

/**
 * A workspace's inbox: the open suggestions of every chat of the workspace, newest offer
 * first. Each chat's log stays the only truth; the index on the workspace's own hash tag
 * (keys.ts `workspaceKeys`) is a cache of it, kept by one protocol:
 * - before a write that changes a chat's open offers of a workspace (an offer, any
 *   settlement, a restore) is appended, the chat is announced there (lua/announce-2.lua):
 *   marked pending, with a new token that the append carries; the append refuses a
 *   missing token, or one at or below the chat's fence (status FENCED), and the writer
 *   announces again (`announced`);
 * - a read reads every pending chat back from its log, fencing its token first
 *   (lua/inboxChat-2.lua), so that an append announced before and not made yet is
 *   refused; then it writes the chat's open offers into the index and clears the mark
 *   (lua/inboxPut-4.lua), unless an announcement came meanwhile;
 * - every other chat is as its log says, so a page of the index is read in one script
 *   (lua/inboxPage-4.lua) with the offers' records.
 * A crash between any two steps leaves at worst a pending chat, read back by the next
 * read: the index never lacks an open offer nor keeps a settled one. While Redis refuses
 * writes (out of memory, a disk that refuses them) a read writes nothing: pending chats
 * are read from their logs unfenced and stay pending (store/log-reads.ts). No script
 * touches a session's keys and the index together. Records written around the service
 * (not by its scripts) reach the index at the chat's next write or a rebuild
 * (store/inbox-rebuild.ts).
 * Pinned by test/store/inbox-model.test.ts.
 */
export class WorkspaceInbox {
  /** RETENTION_DAYS in ms (0: none): chats may expire, and a read drops those that did. */
  readonly retentionMs: number;

  /**
   * Whether an append tells the workspace's channel itself (SPUBLISH from its script,
   * right after the write): on a standalone Redis, where a script may publish on any
   * channel. On a cluster the channel lives in the workspace's slot, most often on
   * another node than the chat's, where a script may not publish: the writer tells it
   * once the append answered (`tell`), so a crash in between leaves the workspace's
   * watchers behind until its next change (the index itself stays right: the chat is
   * pending there since its announcement).
   */
  readonly tellsInScript: boolean;

  /** @param options.retentionMs RETENTION_DAYS in ms; 0, the default: chats never expire. */
  constructor(
    readonly redis: Redis | Cluster,
    options: { readonly retentionMs?: number } = {},
  ) {
    this.retentionMs = options.retentionMs ?? 0;
    this.tellsInScript = !redis.isCluster;
  }

  /** The workspace channel's parts as the appends carry them (keys.ts `workspaceChannelParts`). */
  get channelParts(): readonly [string, string] {
    return workspaceChannelParts(this.tellsInScript);
  }

  /**
   * Tells the watchers of the workspace that a chat of it changed (SPUBLISH on its
   * channel, in its slot), when the appends do not (`tellsInScript`); not awaited by the
   * writer, and a failure only delays the watchers until the next change.
   */
  tell(workspaceId: string, sessionId: string): void {
    if (this.tellsInScript || workspaceId === "") return;
    this.redis.spublish(workspaceKeys(workspaceId).changes, sessionId).catch(() => {
      // The workspace's node is down: its watchers fail on their next read anyway.
    });
  }

  /**
   * The chat leaves the workspace's index (lua/inboxForget-4.lua): its members, records,
   * token and pending mark. A chat whose log holds records again by then (a write after
   * its erasure or expiry made it anew) is read back into the index at once, announced
   * anew, so that the index never lacks its open offers.
   */
  async forget(workspaceId: string, sessionId: string): Promise<void> {
    const keys = workspaceKeys(workspaceId);
    await runScript(
      this.redis,
      "inboxForget",
      keys.offers,
      keys.chats,
      keys.pending,
      keys.docs,
      sessionId,
      keys.changes,
    );
    if ((await this.redis.exists(sessionKeys(sessionId).log)) === 1) {
      const token = await this.announce(workspaceId, sessionId);
      await this.resolve(workspaceId, sessionId, String(token));
    }
  }

  /**
   * With a retention, the chats of `page` that may have expired (an offer older than the
   * retention, less a minute for clocks) whose log is gone: they leave the index.
   */
  async #expired(page: InboxPage): Promise<string[]> {
    if (this.retentionMs <= 0) return [];
    const since = Date.now() - this.retentionMs + 60_000;
    const old = new Set(
      page.entries
        .filter(
          (e) =>
            e.suggestion.offeredAt === undefined || timestampMs(e.suggestion.offeredAt) < since,
        )
        .map((e) => e.suggestion.sessionId),
    );
    return (
      await Promise.all(
        [...old].map(async (s) => ((await this.redis.exists(sessionKeys(s).log)) === 0 ? [s] : [])),
      )
    ).flat();
  }

  /** Marks the chat pending in the workspace; answers its new token (at least `minimum`). */
  async announce(workspaceId: string, sessionId: string, minimum = 0): Promise<number> {
    const keys = workspaceKeys(workspaceId);
    return Number(
      await runScript(this.redis, "announce", keys.chats, keys.pending, sessionId, String(minimum)),
    );
  }

  /**
   * What an append of the chat carries to be announced in the workspace with a token of
   * at least `minimum`: a token announced now (`announce`), one round trip before the
   * append.
   */
  async announcement(workspaceId: string, sessionId: string, minimum = 0): Promise<InboxToken> {
    const token = String(await this.announce(workspaceId, sessionId, minimum));
    return { token, workspace: workspaceId };
  }

  /**
   * The chat's open offers of the workspace, from its log; with `fence`, fenced at that
   * token first (in the same script).
   */
  async chatEntries(sessionId: string, workspaceId: string, fence = ""): Promise<InboxEntry[]> {
    return (await this.#readChat(sessionId, workspaceId, fence)).entries;
  }

  /**
   * The chat's open offers of the workspace (lua/inboxChat-2.lua); `fenced` false when
   * Redis refused the script as a write and the log was read alone (store/log-reads.ts):
   * no fence was taken then, so the read may not end the chat's pending mark.
   */
  async #readChat(sessionId: string, workspaceId: string, fence: string) {
    const keys = sessionKeys(sessionId);
    const read = await orFromLog(
      async () => {
        const reply = await runScript(
          this.redis,
          "inboxChat",
          keys.log,
          keys.projection,
          workspaceId,
          fence,
        );
        const offers: PlacedOffer[] = [];
        for (let i = 1; i + 1 < reply.length; i += 2) {
          const [record] = parseEntries([reply[i + 1] as [string, string[]]]);
          if (record !== undefined) offers.push({ position: Number(reply[i]), record });
        }
        return { logged: reply[0] === 1, fenced: true, offers };
      },
      async () => {
        const { records } = await readWholeLog(this.redis, sessionId);
        return { logged: false, fenced: false, offers: openOffersOf(records, workspaceId) };
      },
    );
    const entries = read.offers.map(({ position, record }): InboxEntry => {
      const suggestion = offeredSuggestion(sessionId, record);
      const at = suggestion.offeredAt === undefined ? 0 : timestampMs(suggestion.offeredAt);
      const member = inboxMember(at, sessionId, position);
      return { member, suggestion, doc: JSON.stringify([record.entryId, record.fields]) };
    });
    return { logged: read.logged, fenced: read.fenced, entries };
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
    const written = await runScript(
      this.redis,
      "inboxPut",
      keys.offers,
      keys.chats,
      keys.pending,
      keys.docs,
      sessionId,
      token,
      clear ? "1" : "0",
      ...entries.flatMap((e) => [e.member, e.doc]),
    );
    return written === 1;
  }

  /**
   * Reads a pending chat back with a fence at `token` and writes it into the index. A
   * chat with an empty log stays pending (no fence is taken there, see
   * lua/inboxChat-2.lua), until its first record.
   */
  async resolve(workspaceId: string, sessionId: string, token: string): Promise<InboxEntry[]> {
    const { logged, fenced, entries } = await this.#readChat(sessionId, workspaceId, token);
    // Redis refuses writes: the chat stays pending, as after a crash between two steps,
    // and the next read reads it back again.
    if (!fenced) return entries;
    // An announcement on an empty log that no append followed for longer than any call
    // lasts (a settlement of an erased chat, a writer that crashed): dropped, so that the
    // index keeps no chat that has no records (tokens are microseconds of server time).
    const stale = !logged && Number(token) < (Date.now() - STALE_ANNOUNCEMENT_MS) * 1000;
    await orFromLog(
      () => this.put(workspaceId, sessionId, token, logged || stale, entries),
      async () => false,
    );
    return entries;
  }

  /**
   * Up to `size` open suggestions after `after` ('' from the newest), newest offer
   * first: the index's window, with every pending chat read back from its log (fenced)
   * and merged in. A page may hold fewer than `size` while more follow (a pending chat
   * lost members); `next` says where to go on.
   */
  async page(workspaceId: string, size: number, after: string): Promise<InboxPage> {
    const page = await this.#page(workspaceId, size, after);
    const gone = await this.#expired(page);
    if (gone.length === 0) return page;
    // An expired chat leaves at this read; the page is read again without it. While
    // Redis refuses writes it stays in the index, and only this page leaves it out.
    return orFromLog(
      async () => {
        await Promise.all(gone.map((s) => this.forget(workspaceId, s)));
        return this.#page(workspaceId, size, after);
      },
      async () => ({
        entries: page.entries.filter((e) => !gone.includes(e.suggestion.sessionId)),
        next: page.next,
      }),
    );
  }

  async #page(workspaceId: string, size: number, after: string): Promise<InboxPage> {
    const keys = workspaceKeys(workspaceId);
    const asked = `${workspaceId}\n${after}\n${size}`;
    const held = this.#pages.get(asked);
    const reply = await runScript(
      this.redis,
      "inboxPage",
      keys.offers,
      keys.chats,
      keys.pending,
      keys.docs,
      after,
      String(size),
      held?.version ?? "",
    );
    if (reply.length === 1 && held !== undefined && reply[0] === held.version) return held.page;
    const page = await mergePage({ workspaceId, size, after }, reply, {
      resolve: (w, s, token) => this.resolve(w, s, token),
      chatEntries: (s, w) => this.chatEntries(s, w),
      entries: this.#entries,
    });
    // Kept only when no chat was pending: reading one back moved the version already.
    if ((reply[0] as unknown[]).length === 0) this.#pages.keep(asked, String(reply[3]), page);
    return page;
  }

  /** The entries made from the index's records (store/inbox-entries.ts). */
  readonly #entries = new InboxEntries();

  /** Pages read while no chat was pending, by (workspace, after, size), with their version. */
  readonly #pages = new KeptPages();
}

/**
 * How old an announcement of a chat with an empty log must be for a read to drop it:
 * longer than the longest call (MAX_DEADLINE_MS is at most an hour) and any clock skew.
 */
export const STALE_ANNOUNCEMENT_MS = 2 * 3_600_000;
