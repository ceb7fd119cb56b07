import type { Cluster, Redis } from "ioredis";
import type { Settlement, Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { LAST_STREAM_ID } from "../domain/cursor.js";
import { type LogRecord, parseEntries } from "../domain/fold.js";
import { foldSettlements, settlementOf, suggestionAfter } from "../domain/settlements.js";
import type { Fenced, InboxToken } from "./inbox-token.js";
import { sessionKeys, WORKSPACE_CHANNEL_PARTS } from "./keys.js";
import { orFromLog, readWholeLog } from "./log-reads.js";
import { runScript } from "./run-script.js";
import type { ScriptReply } from "./scripts.js";

/** A withdrawal as the tool hands it to the store: fields already trimmed and checked. */
export interface Withdrawal {
  readonly title: string;
  readonly reason: string;
  /** The runtime's id of the call; empty: no retry protection. */
  readonly toolCallId: string;
}

/** What the atomic withdraw step answered; mirrors the status codes of lua/withdraw-3.lua. */
export type WithdrawOutcome =
  | { readonly kind: "withdrawn" | "duplicate"; readonly suggestion: Suggestion }
  | { readonly kind: "no-open-offer" };

/** The status codes of lua/withdraw-3.lua. */
enum WithdrawStatus {
  Withdrawn = 0,
  Duplicate = 1,
  NoOpenOffer = 2,
  Fenced = 3,
}

/** One `{ entry id, { field, value, ... } }` of a script's reply as a record. */
function recordOf(entry: ScriptReply[number] | undefined): LogRecord {
  if (!Array.isArray(entry) || entry.length < 2) throw new Error("script answered no record");
  const [record] = parseEntries([[entry[0] as string, entry[1] as string[]]]);
  if (record === undefined) throw new Error("script answered no record");
  return record;
}

/**
 * withdraw_suggestion's store step (lua/withdraw-3.lua), one round trip: the newest open
 * offer of the session with exactly `title` is settled dismissed by the agent, with the
 * reason and the call's id on the record; a call id that withdrew already answers the
 * suggestion as that first withdrawal left it, and records nothing. `channel`: the
 * workspace channel's parts (keys.ts `workspaceChannelParts`).
 */
export async function withdrawOffer(
  redis: Redis | Cluster,
  sessionId: string,
  withdrawal: Withdrawal,
  at: InboxToken,
  channel: readonly [string, string] = WORKSPACE_CHANNEL_PARTS,
  retentionMs = 0,
): Promise<WithdrawOutcome | Fenced> {
  const keys = sessionKeys(sessionId);
  const reply = await runScript(
    redis,
    "withdraw",
    keys.log,
    keys.projection,
    keys.changes,
    withdrawal.title,
    withdrawal.reason,
    withdrawal.toolCallId,
    at.token,
    ...channel,
    at.workspace,
    ...(retentionMs > 0 ? [String(retentionMs)] : []),
  );
  const status = reply[0] as WithdrawStatus;
  switch (status) {
    case WithdrawStatus.Withdrawn:
    case WithdrawStatus.Duplicate:
      return {
        kind: status === WithdrawStatus.Withdrawn ? "withdrawn" : "duplicate",
        suggestion: suggestionAfter(sessionId, recordOf(reply[1]), recordOf(reply[2])),
      };
    case WithdrawStatus.NoOpenOffer:
      return { kind: "no-open-offer" };
    case WithdrawStatus.Fenced:
      return { fenced: Number(reply[1]), workspaceId: String(reply[2]) };
    default:
      throw new Error(`withdraw script answered an unknown status ${String(reply[0])}`);
  }
}

/**
 * The settlements the fold accepted after the stream id `after` (empty: all), in log
 * order, each with the suggestion as it stood right after it (lua/settlements-2.lua):
 * O(records after the cursor). `after` must be checked already (domain/cursor.ts).
 * While Redis refuses writes, the fold of the whole log (`foldSettlements`), equal.
 */
export async function settlementsAfter(
  redis: Redis | Cluster,
  sessionId: string,
  after: string,
): Promise<Settlement[]> {
  // Nothing can follow the largest id, and Redis refuses it as an exclusive start.
  if (after === LAST_STREAM_ID) return [];
  const keys = sessionKeys(sessionId);
  return orFromLog(
    async () =>
      settlementsOfReply(
        sessionId,
        await runScript(redis, "settlements", keys.log, keys.projection, after),
      ),
    // Redis refuses writes (store/log-reads.ts): the whole log folded, nothing written.
    async () => foldSettlements(sessionId, (await readWholeLog(redis, sessionId)).records, after),
  );
}

/** The settlements of a lua/settlements-2.lua reply. */
function settlementsOfReply(sessionId: string, reply: ScriptReply): Settlement[] {
  const offers = ((reply[0] ?? []) as ScriptReply).map(recordOf);
  return ((reply[1] ?? []) as ScriptReply).map((pair) => {
    const [entry, at] = pair as ScriptReply;
    const offer = offers[(at as number) - 1];
    if (offer === undefined) throw new Error("settlements script named no offer");
    return settlementOf(sessionId, offer, recordOf(entry));
  });
}
