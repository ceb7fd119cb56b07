import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { type DismissalChoice, dismissReasonWord } from "../domain/dismissal.js";
import { offeredSuggestion, parseEntries } from "../domain/fold.js";
import { LIFETIME_LIMIT, OPEN_LIMIT } from "../domain/limits.js";
import { type Outcome, STANDING_WORDS } from "../domain/settlement.js";
import type { Fenced } from "./inbox-token.js";
import { WORKSPACE_CHANNEL_PARTS, workspaceKeys } from "./keys.js";
import type { ScriptReply } from "./scripts.js";

/*
 * What the offer and settle scripts take and answer, in one place: the ARGV each
 * script's header states, and one decoder per script from its status codes to an
 * outcome (as bullmq decodes its scripts' error codes).
 */

/** An offer as the tool hands it to the store: fields already trimmed and checked. */
export interface NewOffer {
  readonly id: string;
  readonly turnId: string;
  readonly toolCallId: string;
  readonly title: string;
  readonly tldr: string;
  readonly brief: string;
  /**
   * The title as the duplicate check compares it (domain/refusals.ts `normalizedTitle`,
   * made once by the tool); left out, the offer is not checked for a duplicate and its
   * record keeps none.
   */
  readonly normalizedTitle?: string;
}

/** What the atomic offer step answered; mirrors the status codes of lua/offer-3.lua. */
export type OfferOutcome =
  | { readonly kind: "recorded" | "duplicate"; readonly suggestion: Suggestion }
  | {
      readonly kind:
        | "lifetime-limit"
        | "open-limit"
        | "turn-limit"
        | "quota-ok"
        | "duplicate-open"
        | "duplicate-dismissed";
    };

/** The status codes of lua/offer-3.lua. */
enum OfferStatus {
  Recorded = 0,
  Duplicate = 1,
  LifetimeLimit = 2,
  OpenLimit = 3,
  TurnLimit = 4,
  Checked = 5,
  Fenced = 6,
  DuplicateOpen = 7,
  DuplicateDismissed = 8,
}

/** What the atomic settle step answered; mirrors the status codes of lua/settle-3.lua. */
export interface SettleOutcome {
  readonly kind: "recorded" | "already" | "not-found" | "not-open" | "open-limit";
  /** The offer's standing after the call (before it, for refusals). */
  readonly state: SuggestionState;
  /** The started chat, when the offer stands started. */
  readonly chatId: string;
}

const SETTLE_KINDS = ["recorded", "already", "not-found", "not-open", "open-limit"] as const;

/**
 * The ARGV of lua/settle-3.lua: the workspace channel's parts let it tell the inbox
 * (empty ones, `workspaceChannelParts(false)`, when the caller tells it); then the
 * retention (ARGV 9) and a person's dismissal's reason word and note (ARGV 10 and 11).
 */
export function settleArgs(
  suggestionId: string,
  outcome: Outcome,
  chatId: string,
  token: string,
  tokenWorkspace = "",
  channel: readonly [string, string] = WORKSPACE_CHANNEL_PARTS,
  retentionMs = 0,
  dismissal?: DismissalChoice,
) {
  const argv = [
    ...[suggestionId, outcome, chatId, String(OPEN_LIMIT), token, ...channel, tokenWorkspace],
  ];
  const dismissed = dismissal !== undefined && outcome === "dismissed";
  if (retentionMs > 0 || dismissed) argv.push(String(retentionMs));
  if (dismissed) argv.push(dismissReasonWord(dismissal.reason), dismissal.note);
  return argv;
}

/** Reads the reply of lua/settle-3.lua; status 5 (the inbox fenced the token) as `Fenced`. */
export function settleOutcome(reply: ScriptReply): SettleOutcome | Fenced {
  if (reply[0] === 5) return { fenced: Number(reply[3]), workspaceId: String(reply[4]) };
  const kind = SETTLE_KINDS[reply[0] as number];
  if (kind === undefined) {
    throw new Error(`settle script answered an unknown status ${String(reply[0])}`);
  }
  return {
    kind,
    state: STANDING_WORDS[reply[1] as string] ?? SuggestionState.UNSPECIFIED,
    chatId: reply[2] as string,
  };
}

/**
 * The ARGV of lua/offer-3.lua; with a workspace, its inbox token and channel too (the
 * channel '' when the caller tells the workspace, `tellInScript` false).
 */
export function offerArgs(
  offer: NewOffer,
  checkOnly: boolean,
  workspaceId: string,
  token: string,
  tellInScript = true,
  retentionMs = 0,
): string[] {
  // Without a workspace its three arguments are sent empty, so the retention comes 13th
  // and the normalized title 14th.
  const channel = tellInScript ? workspaceKeys(workspaceId).changes : "";
  const inbox = workspaceId === "" ? ["", "", ""] : [workspaceId, token, channel];
  return [
    offer.id,
    offer.turnId,
    offer.toolCallId,
    offer.title,
    offer.tldr,
    offer.brief,
    checkOnly ? "check" : "append",
    String(LIFETIME_LIMIT),
    String(OPEN_LIMIT),
    ...inbox,
    String(retentionMs),
    offer.normalizedTitle ?? "",
  ];
}

/** Reads the reply of lua/offer-3.lua; status 6 (the inbox fenced the token) as `Fenced`. */
export function offerOutcome(
  sessionId: string,
  workspaceId: string,
  reply: ScriptReply,
): OfferOutcome | Fenced {
  const status = reply[0] as OfferStatus;
  switch (status) {
    case OfferStatus.Recorded:
    case OfferStatus.Duplicate: {
      const [record] = parseEntries([[reply[2] as string, reply[3] as string[]]]);
      if (record === undefined) throw new Error("offer script answered no offer record");
      const suggestion = offeredSuggestion(sessionId, record);
      return { kind: status === OfferStatus.Recorded ? "recorded" : "duplicate", suggestion };
    }
    case OfferStatus.LifetimeLimit:
      return { kind: "lifetime-limit" };
    case OfferStatus.OpenLimit:
      return { kind: "open-limit" };
    case OfferStatus.TurnLimit:
      return { kind: "turn-limit" };
    case OfferStatus.Checked:
      return { kind: "quota-ok" };
    case OfferStatus.Fenced:
      return { fenced: Number(reply[1]), workspaceId };
    case OfferStatus.DuplicateOpen:
      return { kind: "duplicate-open" };
    case OfferStatus.DuplicateDismissed:
      return { kind: "duplicate-dismissed" };
    default:
      throw new Error(`offer script answered an unknown status ${String(reply[0])}`);
  }
}
