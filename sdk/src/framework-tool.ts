import type { RefusalReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestionClient } from "./clients.js";
import { suggestTaskTool, type ToolDefinition } from "./tool.js";
import {
  callSuggestTaskTool,
  type SuggestTaskToolResult,
  type ToolCallContextInit,
} from "./tool-call.js";
import { callWithdrawSuggestionTool, withdrawSuggestionTool } from "./withdraw-tool.js";

/*
 * What the three framework adapters (`/ai-sdk`, `/openai-agents`, `/langchain`) share: the
 * two tools as definition and runner, the call's context with the framework's tool-call id,
 * and a result every framework can serialize. Nothing here imports a framework.
 */

/** The client an adapter's tools call: suggest_task's and withdraw_suggestion's RPCs. */
export type ToolClient = Pick<SuggestionClient, "suggestTask" | "withdrawSuggestion">;

/** One of the SDK's tools as an adapter wraps it: what the model sees, and the call. */
export interface FrameworkTool {
  readonly definition: ToolDefinition;
  readonly call: (
    client: ToolClient,
    args: unknown,
    context: ToolCallContextInit,
  ) => Promise<SuggestTaskToolResult>;
}

/** suggest_task: `suggestTaskTool`, run by `callSuggestTaskTool`. */
export const SUGGEST_TASK: FrameworkTool = {
  definition: suggestTaskTool,
  call: callSuggestTaskTool,
};

/** withdraw_suggestion: `withdrawSuggestionTool`, run by `callWithdrawSuggestionTool`. */
export const WITHDRAW_SUGGESTION: FrameworkTool = {
  definition: withdrawSuggestionTool,
  call: callWithdrawSuggestionTool,
};

/**
 * The call's context as the caller's function gave it, with the framework's own id of the
 * tool call as `toolCallId` where the function set none: the service answers a repeated
 * call of one id with the first call's result, so a framework's retry records no second
 * offer.
 */
export function withToolCallId(
  context: ToolCallContextInit,
  frameworkCallId: string | undefined,
): ToolCallContextInit {
  if (context.toolCallId || !frameworkCallId) return context;
  return { ...context, toolCallId: frameworkCallId };
}

/**
 * A tool call's result as an adapter hands it to the application: plain JSON (a framework
 * may serialize it, to a UI stream or a trace), while the model reads `content` alone.
 * Recorded: the success line and the suggestion's id. Refused: the refusal's exact text,
 * `isError` true, and why.
 */
export type SuggestionToolOutput =
  | {
      readonly isError: false;
      readonly content: string;
      /** The suggestion recorded (or, for withdraw_suggestion, now dismissed). */
      readonly suggestionId: string;
    }
  | {
      readonly isError: true;
      readonly content: string;
      /** Why the service refused the call. */
      readonly reason: RefusalReason;
    };

/** The JSON-safe output of a tool call's result. */
export function toolOutput(result: SuggestTaskToolResult): SuggestionToolOutput {
  return result.isError
    ? { isError: true, content: result.content, reason: result.refusal.reason }
    : { isError: false, content: result.content, suggestionId: result.suggestion.id };
}
