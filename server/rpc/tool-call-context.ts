import { Code, ConnectError } from "@connectrpc/connect";
import type { AgentRole, ToolCallContext } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { checkOptionalId, checkRuntimeId } from "../domain/ids.js";

/** A tool call's context, its ids checked. */
export interface CheckedContext {
  /** The chat; empty: no chat behind the call (a refusal, not malformed). */
  readonly sessionId: string;
  /** The turn; empty: no open turn (a refusal, not malformed). */
  readonly turnId: string;
  /** The runtime's id of the call; empty: no retry protection. */
  readonly toolCallId: string;
  readonly role: AgentRole;
}

/**
 * The request shape of both tools (suggest_task, withdraw_suggestion), checked before
 * any of their rules: a missing context, or an id that is present but malformed, is
 * INVALID_ARGUMENT (docs/contract.md, SuggestTask's refusals); empty ids are left to the
 * tools' own refusals.
 */
export function checkedContext(context: ToolCallContext | undefined): CheckedContext {
  if (context === undefined) {
    throw new ConnectError("context is required", Code.InvalidArgument);
  }
  return {
    sessionId: checkOptionalId("context.session_id", context.sessionId),
    turnId: checkRuntimeId("context.turn_id", context.turnId),
    toolCallId: checkRuntimeId("context.tool_call_id", context.toolCallId),
    role: context.role,
  };
}
