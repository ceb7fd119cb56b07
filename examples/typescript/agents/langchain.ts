import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { AgentRole } from "@oda/suggest-task";
import {
  type LangChainContextOf,
  suggestTaskLangChainTool,
  withdrawSuggestionLangChainTool,
} from "@oda/suggest-task/langchain";
import { client } from "../client.js";

// The context comes from the RunnableConfig the tools are invoked with, which the model
// never sees: `configurable` carries the chat and the turn, `toolCall.id` the call's id.
const contextOf: LangChainContextOf = ({ configurable }) => ({
  sessionId: configurable?.sessionId,
  turnId: configurable?.turnId,
  role: AgentRole.TOP_LEVEL,
});
const tools = [
  suggestTaskLangChainTool(client, contextOf),
  withdrawSuggestionLangChainTool(client, contextOf),
];

/** One model turn on any tool-calling chat model (ChatOpenAI, ChatAnthropic, ...). */
export async function runTurn(
  model: BaseChatModel,
  turn: { sessionId: string; turnId: string },
  text: string,
): Promise<string> {
  if (model.bindTools === undefined) throw new Error("the model does not call tools");
  const withTools = model.bindTools(tools);
  const messages: BaseMessage[] = [new HumanMessage(text)];
  for (let step = 0; step < 8; step++) {
    const ai = await withTools.invoke(messages);
    messages.push(ai);
    if (!ai.tool_calls?.length) return ai.text;
    for (const call of ai.tool_calls) {
      const tool = tools.find((t) => t.name === call.name);
      // A ToolMessage: the success line, or the refusal's exact text with status "error".
      if (tool) messages.push(await tool.invoke(call, { configurable: turn }));
    }
  }
  return "";
}
