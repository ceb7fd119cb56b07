/**
 * `@oda/suggest-task/openai-agents`: suggest_task (and withdraw_suggestion) as OpenAI Agents
 * SDK function tools, made with the Agents SDK's own `tool` from `@openai/agents` (an
 * optional peer dependency, 0.14).
 *
 * The model sees the SDK's definition (`suggestTaskTool`: name, description, JSON Schema;
 * `strict: false`, since OpenAI's strict mode refuses `maxLength` and the service checks
 * every limit itself) and, as the tool's output, the text `callSuggestTaskTool` gives: the
 * success line or the refusal's exact text. The call's context comes from the run's
 * `RunContext`, which the model never sees: the `context` the application passes to
 * `run(agent, input, { context })`, and the tool call's `callId`.
 *
 * ```ts
 * import { Agent, run } from "@openai/agents";
 * import { suggestTaskAgentTool } from "@oda/suggest-task/openai-agents";
 *
 * type Chat = { sessionId: string; turnId: string };
 * const suggest = suggestTaskAgentTool<Chat>(client, ({ context }) => ({
 *   sessionId: context.sessionId, turnId: context.turnId, role: AgentRole.TOP_LEVEL,
 * }));
 * const agent = new Agent<Chat>({ name: "coder", instructions, tools: [suggest] });
 * await run(agent, input, { context: { sessionId, turnId } });
 * ```
 *
 * @packageDocumentation
 */

import { type FunctionTool, type RunContext, tool } from "@openai/agents";
import {
  type FrameworkTool,
  SUGGEST_TASK,
  type ToolClient,
  WITHDRAW_SUGGESTION,
  withToolCallId,
} from "./framework-tool.js";
import type { ToolCallContextInit } from "./tool-call.js";

export type { ToolClient } from "./framework-tool.js";
export type { ToolCallContextInit } from "./tool-call.js";

/** The third argument the Agents SDK gives a function tool's `execute`: the call, among others. */
export type AgentToolCallDetails = Parameters<FunctionTool["invoke"]>[2];

/**
 * The call's context from the run's `RunContext` (its `context` is what the application
 * gave `run`) and the call's details (`details.toolCall.callId` is used as the context's
 * `toolCallId` when the function sets none).
 */
export type AgentContextOf<C> = (
  runContext: RunContext<C>,
  details: AgentToolCallDetails,
) => ToolCallContextInit | PromiseLike<ToolCallContextInit>;

/** One of the SDK's tools as an Agents SDK function tool; its output is the line the model reads. */
export type SuggestionAgentTool<C> = FunctionTool<C, undefined, string>;

/**
 * The tool's JSON Schema typed as the Agents SDK's non-strict parameters: that type asks
 * for `additionalProperties: true`, which the schema does not say (it allows no other
 * argument); the SDK passes the schema through unchanged (test/sdk/adapters-openai-agents
 * .test.ts compares what the model is handed with `suggestTaskTool`).
 */
type NonStrictParameters = Extract<Parameters<typeof tool>[0], { strict: false }>["parameters"];

function agentTool<C>(
  spec: FrameworkTool,
  client: ToolClient,
  contextOf: AgentContextOf<C>,
): SuggestionAgentTool<C> {
  const { definition } = spec;
  const parameters = {
    ...definition.inputSchema,
    required: [...definition.inputSchema.required],
  } as unknown as NonStrictParameters;
  return tool<NonStrictParameters, C, string>({
    name: definition.name,
    description: definition.description,
    parameters,
    strict: false,
    execute: async (input, runContext, details) => {
      if (runContext === undefined) {
        throw new Error(`${definition.name} was called without the Agents SDK's RunContext`);
      }
      const given = await contextOf(runContext, details);
      const context = withToolCallId(given, details?.toolCall?.callId);
      return (await spec.call(client, input, context)).content;
    },
  }) as unknown as SuggestionAgentTool<C>;
}

/**
 * suggest_task as an Agents SDK function tool. Refusals are outputs the model reads; any
 * other failure (the service unavailable, a malformed request) is thrown, and the Agents
 * SDK's tool error handling (its `errorFunction`) tells the model.
 */
export function suggestTaskAgentTool<C = unknown>(
  client: ToolClient,
  contextOf: AgentContextOf<C>,
): SuggestionAgentTool<C> {
  return agentTool(SUGGEST_TASK, client, contextOf);
}

/** withdraw_suggestion as an Agents SDK function tool; as `suggestTaskAgentTool`. */
export function withdrawSuggestionAgentTool<C = unknown>(
  client: ToolClient,
  contextOf: AgentContextOf<C>,
): SuggestionAgentTool<C> {
  return agentTool(WITHDRAW_SUGGESTION, client, contextOf);
}
