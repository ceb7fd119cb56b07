import { create } from "@bufbuild/protobuf";
import { AgentRole, RefusalReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type WithdrawSuggestionRequest,
  type WithdrawSuggestionResponse,
  WithdrawSuggestionResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { Refusal } from "../domain/refusals.js";
import { withdrawSuggestionTool } from "../domain/tool-declaration.js";
import { checkToolFields } from "../domain/tool-fields.js";
import type { ChatHost } from "../host/chat-host.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { refusalError, storeCall } from "./errors.js";
import { findSession } from "./suggest-task.js";
import { checkedContext } from "./tool-call-context.js";

/** The tool's name: its refusals' prefix and their ErrorInfo domain. */
const TOOL = "withdraw_suggestion";

/** What the withdraw_suggestion handler needs. */
export interface WithdrawSuggestionDeps {
  readonly store: SuggestionStore;
  readonly host: ChatHost;
}

/** The success line of a withdrawal (docs/contract.md). */
export function withdrawnLine(title: string): string {
  return `Withdrew "${title}". It stays dismissed unless the user restores it.`;
}

const refuse = (r: Refusal) => refusalError(r, TOOL);

/**
 * The withdraw_suggestion tool: the offering chat's top-level agent dismisses its own
 * newest open offer with the given title. Request shape first (INVALID_ARGUMENT), then
 * the five checks in order (docs/contract.md), the first that fails answering its refusal:
 * 1 any role but TOP_LEVEL (unset and unknown numbers included), 2 no owning session
 * (empty, or the host knows none), 3 no open turn, 4 the fields (trimmed, code points,
 * the limits of the proto's options), 5 no open offer with that title. The lookup and
 * the dismissal are one atomic step (lua/withdraw-3.lua), which also answers a retried
 * call (same session and tool_call_id) with its first result. Pinned by
 * test/rpc/withdraw.test.ts.
 */
export async function withdrawSuggestion(
  deps: WithdrawSuggestionDeps,
  request: WithdrawSuggestionRequest,
): Promise<WithdrawSuggestionResponse> {
  const context = checkedContext(request.context);
  const { sessionId, turnId, toolCallId } = context;

  if (context.role !== AgentRole.TOP_LEVEL) throw refuse({ reason: RefusalReason.NOT_TOP_LEVEL });
  if (sessionId === "" || (await findSession(deps.host, sessionId)) === undefined) {
    throw refuse({ reason: RefusalReason.NO_SESSION });
  }
  if (turnId === "") throw refuse({ reason: RefusalReason.NO_OPEN_TURN });
  const title = (request.args?.title ?? "").trim();
  const reason = (request.args?.reason ?? "").trim();
  const refusal = checkToolFields({ title, reason }, withdrawSuggestionTool);
  if (refusal !== undefined) throw refuse(refusal);

  const outcome = await storeCall(() =>
    deps.store.withdraw(sessionId, { title, reason, toolCallId }),
  );
  if (outcome.kind === "no-open-offer") {
    throw refuse({ reason: RefusalReason.NO_OPEN_OFFER, title });
  }
  return create(WithdrawSuggestionResponseSchema, {
    suggestion: outcome.suggestion,
    result: withdrawnLine(outcome.suggestion.title),
  });
}
