import type { CallOptions } from "@connectrpc/connect";
import { WithdrawSuggestionArgsSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestionClient } from "./clients.js";
import { type ToolDefinition, toolDefinition } from "./tool.js";
import { readToolArguments } from "./tool-arguments.js";
import { runToolCall, type SuggestTaskToolResult, type ToolCallContextInit } from "./tool-call.js";

/**
 * The withdraw_suggestion tool, offered beside suggest_task: `name` "withdraw_suggestion",
 * the tool's description, and the JSON Schema of `title` and `reason` (`maxLength` 60
 * and 240), both required, all read from `WithdrawSuggestionArgs`' proto options. Pass it
 * to `anthropicTool`, `openAITool` or `mcpTool` as suggest_task's definition is.
 */
export const withdrawSuggestionTool: ToolDefinition = /*@__PURE__*/ toolDefinition(
  WithdrawSuggestionArgsSchema,
);

/** withdraw_suggestion's arguments as the model wrote them, read into strings. */
export interface WithdrawSuggestionArguments {
  readonly title: string;
  readonly reason: string;
}

/**
 * What the model should see as withdraw_suggestion's result, shaped as suggest_task's
 * (`SuggestTaskToolResult`): withdrawn, `content` is `Withdrew "<title>". It stays
 * dismissed unless the user restores it.` with the suggestion, now dismissed by the
 * agent; refused, `content` is the refusal's exact text and `isError` is true.
 */
export type WithdrawSuggestionToolResult = SuggestTaskToolResult;

/** Reads withdraw_suggestion's arguments (`readToolArguments`). */
export function readWithdrawSuggestionArguments(args: unknown): WithdrawSuggestionArguments {
  const read = readToolArguments(withdrawSuggestionTool, args);
  return { title: read.title ?? "", reason: read.reason ?? "" };
}

/**
 * Runs one withdraw_suggestion tool call for an agent runtime, as `callSuggestTaskTool`
 * runs suggest_task's: reads the model's arguments, calls WithdrawSuggestion with the
 * runtime's `context` (its `toolCallId` makes a retry answer the first result), and
 * answers what the model should see: the success line, or the refusal's exact text
 * marked as an error. Any other failure is thrown, for the runtime to handle.
 *
 * ```ts
 * const result = await callWithdrawSuggestionTool(client, block.input, {
 *   sessionId, turnId, role: AgentRole.TOP_LEVEL, toolCallId: block.id,
 * });
 * ```
 */
export function callWithdrawSuggestionTool(
  client: Pick<SuggestionClient, "withdrawSuggestion">,
  args: unknown,
  context: ToolCallContextInit,
  callOptions?: CallOptions,
): Promise<WithdrawSuggestionToolResult> {
  const request = { context, args: readWithdrawSuggestionArguments(args) };
  return runToolCall("WithdrawSuggestion", () => client.withdrawSuggestion(request, callOptions));
}
