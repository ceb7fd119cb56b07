/**
 * `@oda/suggest-task/langchain`: suggest_task (and withdraw_suggestion) as LangChain tools,
 * made with LangChain's own `tool` from `@langchain/core/tools` (an optional peer
 * dependency, 1.x), for any chat model's `bindTools` and any agent loop (LangGraph's
 * `ToolNode`, `createAgent`, a loop by hand).
 *
 * The model sees the SDK's definition (`suggestTaskTool`: name, description, JSON Schema)
 * and, as the tool's result, the text `callSuggestTaskTool` gives: the success line, or the
 * refusal's exact text in a `ToolMessage` of `status: "error"`. The call's context comes
 * from the `RunnableConfig` the tool is invoked with, which the model never sees:
 * `config.configurable` (what the application passes to `invoke`) and `config.toolCall.id`.
 *
 * ```ts
 * import { suggestTaskLangChainTool } from "@oda/suggest-task/langchain";
 *
 * const suggest = suggestTaskLangChainTool(client, ({ configurable }) => ({
 *   sessionId: configurable?.sessionId, turnId: configurable?.turnId, role: AgentRole.TOP_LEVEL,
 * }));
 * const ai = await model.bindTools([suggest]).invoke(messages);
 * for (const call of ai.tool_calls ?? []) {
 *   messages.push(await suggest.invoke(call, { configurable: { sessionId, turnId } }));
 * }
 * ```
 *
 * @packageDocumentation
 */

import { ToolMessage } from "@langchain/core/messages";
import { type DynamicStructuredTool, type ToolRunnableConfig, tool } from "@langchain/core/tools";
import {
  type FrameworkTool,
  SUGGEST_TASK,
  type SuggestionToolOutput,
  type ToolClient,
  toolOutput,
  WITHDRAW_SUGGESTION,
  withToolCallId,
} from "./framework-tool.js";
import type { ToolDefinition } from "./tool.js";
import type { ToolCallContextInit } from "./tool-call.js";

export type { SuggestionToolOutput, ToolClient } from "./framework-tool.js";
export type { ToolCallContextInit } from "./tool-call.js";

/**
 * The call's context from the `RunnableConfig` the tool is invoked with: `configurable` is
 * what the application passed, `toolCall.id` the model's id of the call (used as the
 * context's `toolCallId` when the function sets none).
 */
export type LangChainContextOf = (
  config: ToolRunnableConfig,
) => ToolCallContextInit | PromiseLike<ToolCallContextInit>;

/**
 * One of the SDK's tools as a LangChain tool. Invoked with a model's tool call, it answers
 * a `ToolMessage` (`status` "error" for a refusal, `artifact` the `SuggestionToolOutput`);
 * invoked with bare arguments, the line alone.
 */
export type SuggestionLangChainTool = DynamicStructuredTool;

/**
 * The tool's schema as a Standard JSON Schema: LangChain hands a model
 * `~standard.jsonSchema.input()`, the SDK's definition exactly, and checks the model's
 * arguments with `~standard.validate`, which lets every object through, so that the
 * service's own checks answer (a title over 60 characters gets the reference's text, not
 * LangChain's parsing error; test/sdk/adapters-langchain.test.ts).
 */
function standardSchema(definition: ToolDefinition) {
  const schema = { ...definition.inputSchema, required: [...definition.inputSchema.required] };
  return {
    "~standard": {
      version: 1,
      vendor: "@oda/suggest-task",
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: () => schema, output: () => schema },
    },
  } as const;
}

type ToolFields = Parameters<typeof tool>[1];

function langChainTool(
  spec: FrameworkTool,
  client: ToolClient,
  contextOf: LangChainContextOf,
): SuggestionLangChainTool {
  const { definition } = spec;
  const run = async (input: unknown, config: ToolRunnableConfig) => {
    const callId = config.toolCall?.id;
    const context = withToolCallId(await contextOf(config), callId);
    const output: SuggestionToolOutput = toolOutput(await spec.call(client, input, context));
    if (callId === undefined) return output.content;
    return new ToolMessage({
      content: output.content,
      status: output.isError ? "error" : "success",
      tool_call_id: callId,
      name: definition.name,
      artifact: output,
    });
  };
  const fields = {
    name: definition.name,
    description: definition.description,
    schema: standardSchema(definition),
  } as unknown as ToolFields;
  return tool(run, fields) as SuggestionLangChainTool;
}

/**
 * suggest_task as a LangChain tool. Refusals are results the model reads; any other
 * failure (the service unavailable, a malformed request) is thrown, for the agent loop's
 * own error handling (LangGraph's `ToolNode` tells the model).
 */
export function suggestTaskLangChainTool(
  client: ToolClient,
  contextOf: LangChainContextOf,
): SuggestionLangChainTool {
  return langChainTool(SUGGEST_TASK, client, contextOf);
}

/** withdraw_suggestion as a LangChain tool; as `suggestTaskLangChainTool`. */
export function withdrawSuggestionLangChainTool(
  client: ToolClient,
  contextOf: LangChainContextOf,
): SuggestionLangChainTool {
  return langChainTool(WITHDRAW_SUGGESTION, client, contextOf);
}
