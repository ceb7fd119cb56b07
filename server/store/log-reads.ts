import type { Cluster, Redis } from "ioredis";
import { type LogRecord, offerRecordsOf, parseEntries } from "../domain/fold.js";
import { storeRefusal } from "../redis/store-condition.js";
import { sessionKeys } from "./keys.js";

/**
 * Reads that answer from a chat's log alone, writing nothing, for when Redis refuses
 * writes. The read scripts catch their caches up as they read (the projection, the
 * workspace inbox: lua/includes/projection.lua, workspace-inbox.ts), and so are
 * scripts that write: their `#!lua` line carries no flags, so that Redis refuses them
 * whole, before they run, while it is out of memory or its disk refuses writes, rather
 * than letting a read grow a full Redis. The read is then made again from the log's
 * records (XRANGE, which Redis serves in any state), folded by the reference's rules
 * (domain/fold.ts): O(records) instead of O(offers), and exactly what the log says.
 */

/**
 * Whether Redis refused a write because it cannot take one now: out of memory
 * (`maxmemory` reached under `noeviction`) or a disk that refuses its AOF or snapshots.
 * Such a refusal of a read's cache write-back is answered from the log (`orFromLog`).
 */
export function writesRefused(err: unknown): boolean {
  const kind = storeRefusal(err)?.kind;
  return kind === "out-of-memory" || kind === "disk";
}

/**
 * `read`'s answer; when Redis refused it as a write (`writesRefused`), `fromLog`'s,
 * which must read the log without writing anything. Any other failure is `read`'s.
 */
export async function orFromLog<T>(read: () => Promise<T>, fromLog: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (!writesRefused(err)) throw err;
    return fromLog();
  }
}

/** A whole log as one XRANGE read it. */
export interface WholeLog {
  /**
   * `<id of the last stream entry>:<number of entries>` (`0-0:0` for an empty log), the
   * version lua/readLists-2.lua answers for the same log.
   */
  readonly version: string;
  /** Every record, in stream order. */
  readonly records: LogRecord[];
}

/** Every record of a chat's log and its version, in one read that writes nothing. */
export async function readWholeLog(redis: Redis | Cluster, sessionId: string): Promise<WholeLog> {
  const entries = await redis.xrange(sessionKeys(sessionId).log, "-", "+");
  const last = entries.at(-1)?.[0] ?? "0-0";
  return { version: `${last}:${entries.length}`, records: parseEntries(entries) };
}

/** One open offer of a chat, with its place in the chat's offer order (1, 2, ...). */
export interface PlacedOffer {
  readonly position: number;
  readonly record: LogRecord;
}

/**
 * The open offers of `workspaceId` ('*': of every workspace) among `records`, in offer
 * order, each with its place in the offer order of every offer of the chat: what
 * lua/inboxChat-2.lua answers from the projection.
 */
export function openOffersOf(records: Iterable<LogRecord>, workspaceId: string): PlacedOffer[] {
  const open: PlacedOffer[] = [];
  offerRecordsOf(records).forEach(({ offer, settlement }, i) => {
    if (settlement !== undefined) return;
    if (workspaceId !== "*" && offer.fields.ws !== workspaceId) return;
    open.push({ position: i + 1, record: offer });
  });
  return open;
}
