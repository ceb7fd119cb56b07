import {
  AIMessageChunk,
  type BaseMessage,
  HumanMessage,
  ToolMessage,
} from "@langchain/core/messages";
import type { ToolCall } from "@langchain/core/messages/tool";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { FakeStreamingChatModel } from "@langchain/core/utils/testing";
import { describe, expect, test } from "vitest";
import {
  type LangChainContextOf,
  suggestTaskLangChainTool,
  withdrawSuggestionLangChainTool,
} from "../../sdk/src/langchain.js";
import { AgentRole, suggestTaskTool, withdrawSuggestionTool } from "../../sdk/src/node.js";
import { expectOneOfferPerTurn, TWO_OFFERS, useAdapterService } from "../support/adapters.js";
import { successText } from "../support/suggest.js";

/*
 * `@oda/suggest-task/langchain` with LangChain's fake tool-calling chat model
 * (`FakeStreamingChatModel`, whose `bindTools` formats tools as a provider does) and the
 * agent loop by hand: the model's `tool_calls` invoked with a `RunnableConfig`, against a
 * real service.
 */

/** The application's per-run values, passed as `configurable`. */
const contextOf: LangChainContextOf = ({ configurable }) => ({
  sessionId: configurable?.sessionId,
  turnId: configurable?.turnId,
  role: AgentRole.TOP_LEVEL,
});

/** A model whose every step calls suggest_task with `args`, `[id, arguments]` each. */
function modelCalling(...calls: [string, Record<string, unknown>][]) {
  const toolCalls: ToolCall[] = calls.map(([id, args]) => ({
    id,
    name: "suggest_task",
    args,
    type: "tool_call",
  }));
  return new FakeStreamingChatModel({
    chunks: [new AIMessageChunk({ content: "", tool_calls: toolCalls })],
  });
}

/** One step of the loop: the model's answer, then each of its tool calls run with `config`. */
async function step(
  model: FakeStreamingChatModel,
  tools: ReturnType<typeof suggestTaskLangChainTool>[],
  config: { configurable: Record<string, string> },
): Promise<BaseMessage[]> {
  const messages: BaseMessage[] = [new HumanMessage("Fix the upload bug.")];
  const ai = await model.bindTools(tools).invoke(messages);
  messages.push(ai);
  for (const call of ai.tool_calls ?? []) {
    const tool = tools.find((t) => t.name === call.name);
    if (tool === undefined) throw new Error(`the model called an unknown tool ${call.name}`);
    messages.push(await tool.invoke(call, config));
  }
  return messages;
}

function toolMessages(messages: BaseMessage[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
}

describe("the LangChain adapter", () => {
  const service = useAdapterService();

  test("the model is handed the SDK's definitions of both tools", async () => {
    const tools = [
      suggestTaskLangChainTool(service.client, contextOf),
      withdrawSuggestionLangChainTool(service.client, contextOf),
    ];
    // What a provider's chat model sends (ChatOpenAI formats tools with convertToOpenAITool),
    // and what the fake model's bindTools hands the model.
    const handed = tools.map((tool) => convertToOpenAITool(tool).function);
    const expected = [suggestTaskTool, withdrawSuggestionTool].map((d) => ({
      name: d.name,
      description: d.description,
      parameters: { ...d.inputSchema },
    }));
    expect(handed).toEqual(expected);
    const bound = new FakeStreamingChatModel({}).bindTools(tools) as unknown as {
      config: { tools: { function: unknown }[] };
    };
    expect(bound.config.tools.map((t) => t.function)).toEqual(expected);
  });

  test("two offers in one turn: one recorded, the other refused with the reference's text", async () => {
    const sessionId = await service.chat("langchain");
    const [first, second] = TWO_OFFERS;
    const model = modelCalling(["call-1", first], ["call-2", second]);
    const tool = suggestTaskLangChainTool(service.client, contextOf);
    const messages = await step(model, [tool], { configurable: { sessionId, turnId: "turn-1" } });
    const results = toolMessages(messages);
    expect(results.map((m) => m.tool_call_id)).toEqual(["call-1", "call-2"]);
    const read = results.map((m) => ({
      content: String(m.content),
      isError: m.status === "error",
    }));
    const offer = expectOneOfferPerTurn(read, await service.recorded(sessionId), "turn-1");
    expect(results.map((m) => m.artifact)).toContainEqual({
      isError: false,
      content: successText(offer.title),
      suggestionId: offer.id,
    });
  });

  test("the call's id is the tool call's id: a repeated call answers the first result", async () => {
    const sessionId = await service.chat("langchain-retry");
    const [first] = TWO_OFFERS;
    const tool = suggestTaskLangChainTool(service.client, contextOf);
    const config = { configurable: { sessionId, turnId: "turn-1" } };
    const once = await step(modelCalling(["call-1", first]), [tool], config);
    const again = await step(modelCalling(["call-1", first]), [tool], config);
    expect([...toolMessages(once), ...toolMessages(again)].map((m) => m.content)).toEqual([
      successText(first.title),
      successText(first.title),
    ]);
    expect(await service.recorded(sessionId)).toHaveLength(1);
  });

  test("arguments the schema would refuse reach the service, which answers its own text", async () => {
    const sessionId = await service.chat("langchain-long");
    const model = modelCalling([
      "call-1",
      { title: "x".repeat(61), tldr: "W", brief: "B", extra: 1 },
    ]);
    const tool = suggestTaskLangChainTool(service.client, contextOf);
    const messages = await step(model, [tool], { configurable: { sessionId, turnId: "turn-1" } });
    expect(toolMessages(messages).map((m) => [m.content, m.status])).toEqual([
      ["suggest_task: title must be at most 60 characters (got 61)", "error"],
    ]);
    expect(await service.recorded(sessionId)).toEqual([]);
  });

  test("invoked with bare arguments (no tool call), the tool answers the line alone", async () => {
    const sessionId = await service.chat("langchain-bare");
    const [first] = TWO_OFFERS;
    const tool = suggestTaskLangChainTool(service.client, contextOf);
    const answer = await tool.invoke(first, { configurable: { sessionId, turnId: "turn-1" } });
    expect(answer).toBe(successText(first.title));
  });
});
