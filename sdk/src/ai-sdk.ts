/**
 * `@oda/suggest-task/ai-sdk`: suggest_task (and withdraw_suggestion) as Vercel AI SDK tools,
 * made with the AI SDK's own `tool` from `ai` (an optional peer dependency, 6.x).
 *
 * The model sees the SDK's definition (`suggestTaskTool`: name, description, JSON Schema)
 * and, as the tool's result, the text `callSuggestTaskTool` gives: the success line, or the
 * refusal's exact text as an `error-text` output. The call's context comes from the AI SDK's
 * tool execution options, which the model never sees: `experimental_context` (what the
 * application passes to `generateText` or `streamText`) and `toolCallId`.
 *
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { suggestTaskAiTool } from "@oda/suggest-task/ai-sdk";
 *
 * const suggest_task = suggestTaskAiTool(client, ({ experimental_context }) => {
 *   const { sessionId, turnId } = experimental_context as { sessionId: string; turnId: string };
 *   return { sessionId, turnId, role: AgentRole.TOP_LEVEL };
 * });
 * await generateText({
 *   model, prompt, tools: { suggest_task }, stopWhen: stepCountIs(5),
 *   experimental_context: { sessionId, turnId },
 * });
 * ```
 *
 * @packageDocumentation
 */

import { jsonSchema, type Tool, type ToolExecutionOptions, tool } from "ai";
import {
  type FrameworkTool,
  SUGGEST_TASK,
  type SuggestionToolOutput,
  type ToolClient,
  toolOutput,
  WITHDRAW_SUGGESTION,
  withToolCallId,
} from "./framework-tool.js";
import type { ToolCallContextInit } from "./tool-call.js";

export type { SuggestionToolOutput, ToolClient } from "./framework-tool.js";
export type { ToolCallContextInit } from "./tool-call.js";

/**
 * The call's context from the AI SDK's tool execution options: `experimental_context` is
 * what the application gave `generateText`/`streamText`, `toolCallId` the model's id of the
 * call (used as the context's `toolCallId` when the function sets none).
 */
export type AiSdkContextOf = (
  options: ToolExecutionOptions,
) => ToolCallContextInit | PromiseLike<ToolCallContextInit>;

/** One of the SDK's tools as an AI SDK tool: the model's arguments in, the JSON-safe output out. */
export type SuggestionAiTool = Tool<Record<string, unknown>, SuggestionToolOutput>;

function aiTool(
  spec: FrameworkTool,
  client: ToolClient,
  contextOf: AiSdkContextOf,
): SuggestionAiTool {
  const { definition } = spec;
  return tool<Record<string, unknown>, SuggestionToolOutput>({
    description: definition.description,
    inputSchema: jsonSchema<Record<string, unknown>>({
      ...definition.inputSchema,
      required: [...definition.inputSchema.required],
    }),
    execute: async (input, options) => {
      const context = withToolCallId(await contextOf(options), options.toolCallId);
      return toolOutput(await spec.call(client, input, context));
    },
    // What the model reads: the line alone, marked as an error for a refusal.
    toModelOutput: ({ output }) => ({
      type: output.isError ? "error-text" : "text",
      value: output.content,
    }),
  });
}

/**
 * suggest_task as an AI SDK tool; put it in `tools` under the name `suggest_task`
 * (`suggestTaskTool.name`). Refusals are results the model reads, not errors; any other
 * failure (the service unavailable, a malformed request) is thrown and becomes the AI
 * SDK's tool error.
 */
export function suggestTaskAiTool(client: ToolClient, contextOf: AiSdkContextOf): SuggestionAiTool {
  return aiTool(SUGGEST_TASK, client, contextOf);
}

/** withdraw_suggestion as an AI SDK tool, under the name `withdraw_suggestion`; as `suggestTaskAiTool`. */
export function withdrawSuggestionAiTool(
  client: ToolClient,
  contextOf: AiSdkContextOf,
): SuggestionAiTool {
  return aiTool(WITHDRAW_SUGGESTION, client, contextOf);
}

/**
 * Both tools as the AI SDK's `tools` record, keyed by the names the model calls:
 * `{ suggest_task, withdraw_suggestion }`.
 */
export function suggestionAiTools(
  client: ToolClient,
  contextOf: AiSdkContextOf,
): { suggest_task: SuggestionAiTool; withdraw_suggestion: SuggestionAiTool } {
  return {
    suggest_task: suggestTaskAiTool(client, contextOf),
    withdraw_suggestion: withdrawSuggestionAiTool(client, contextOf),
  };
}
