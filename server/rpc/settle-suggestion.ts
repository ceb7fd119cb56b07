import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type DismissSuggestionRequest,
  type DismissSuggestionResponse,
  DismissSuggestionResponseSchema,
  type DraftSuggestionRequest,
  type DraftSuggestionResponse,
  DraftSuggestionResponseSchema,
  type RestoreSuggestionRequest,
  type RestoreSuggestionResponse,
  RestoreSuggestionResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { checkDismissal, type DismissalChoice } from "../domain/dismissal.js";
import { SuggestionErrorCode } from "../domain/failures.js";
import { requireId } from "../domain/ids.js";
import { OPEN_LIMIT } from "../domain/limits.js";
import type { UserOutcome } from "../domain/settlement.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { storeCall, suggestionError } from "./errors.js";

/** What the settle handlers need. */
export interface SettleSuggestionDeps {
  readonly store: SuggestionStore;
}

/** The ids a settle request carries. */
interface SettleRequest {
  readonly sessionId: string;
  readonly suggestionId: string;
}

/**
 * Settles one suggestion with one atomic check-and-append (lua/settle-3.lua) and answers
 * it as that step left it:
 * - recorded, or already standing as asked (a repeat records nothing, so a call that
 *   ioredis re-sends after a reconnect is harmless): the suggestion;
 * - no such offer: `task-suggestion/not-found`;
 * - an outcome that does not fit its standing: `task-suggestion/not-open` with the state;
 * - a restore with the open limit reached: `task-suggestion/open-limit`.
 * Both ids are checked before Redis is touched. Pinned by test/rpc/settle.test.ts.
 */
export async function settleSuggestion(
  deps: SettleSuggestionDeps,
  request: SettleRequest,
  outcome: UserOutcome,
  dismissal?: DismissalChoice,
): Promise<Suggestion> {
  const sessionId = requireId("session_id", request.sessionId);
  const suggestionId = requireId("suggestion_id", request.suggestionId);
  const answer = await storeCall(() =>
    deps.store.settleAndRead(sessionId, suggestionId, outcome, "", dismissal),
  );
  const { kind, state } = answer.outcome;
  switch (kind) {
    case "recorded":
    case "already": {
      const suggestion = answer.suggestion;
      if (suggestion === undefined) {
        throw new Error(`settle answered ${kind} for ${suggestionId}, which the fold lacks`);
      }
      return suggestion;
    }
    case "not-found":
      throw suggestionError({ code: SuggestionErrorCode.NotFound, suggestionId });
    case "not-open":
      throw suggestionError({ code: SuggestionErrorCode.NotOpen, suggestionId, state });
    case "open-limit":
      throw suggestionError({ code: SuggestionErrorCode.OpenLimit, limit: OPEN_LIMIT });
  }
}

/** DraftSuggestion: an open suggestion becomes drafted; a drafted one answers as it is. */
export async function draftSuggestion(
  deps: SettleSuggestionDeps,
  request: DraftSuggestionRequest,
): Promise<DraftSuggestionResponse> {
  const suggestion = await settleSuggestion(deps, request, "drafted");
  return create(DraftSuggestionResponseSchema, { suggestion });
}

/**
 * DismissSuggestion: an open suggestion becomes dismissed, with the person's reason and
 * note (the note trimmed, at most 240 code points, else INVALID_ARGUMENT, checked after
 * the ids and before Redis); a dismissed one answers as it is, with the reason and note
 * it was dismissed with, and records nothing.
 */
export async function dismissSuggestion(
  deps: SettleSuggestionDeps,
  request: DismissSuggestionRequest,
): Promise<DismissSuggestionResponse> {
  requireId("session_id", request.sessionId);
  requireId("suggestion_id", request.suggestionId);
  const checked = checkDismissal(request.reason, request.note);
  if ("problem" in checked) throw new ConnectError(checked.problem, Code.InvalidArgument);
  const suggestion = await settleSuggestion(deps, request, "dismissed", checked.choice);
  return create(DismissSuggestionResponseSchema, { suggestion });
}

/**
 * RestoreSuggestion: a dismissed suggestion opens again while fewer than 3 are open (the
 * check and the append are one step, so concurrent restores never exceed the limit);
 * an open one answers as it is; a started or drafted one is not-open.
 */
export async function restoreSuggestion(
  deps: SettleSuggestionDeps,
  request: RestoreSuggestionRequest,
): Promise<RestoreSuggestionResponse> {
  const suggestion = await settleSuggestion(deps, request, "restored");
  return create(RestoreSuggestionResponseSchema, { suggestion });
}
