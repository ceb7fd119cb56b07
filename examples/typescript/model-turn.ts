import Anthropic from "@anthropic-ai/sdk";
import {
  AgentRole,
  anthropicTool,
  callSuggestTaskTool,
  callWithdrawSuggestionTool,
  settlementNotes,
  withdrawSuggestionTool,
} from "@oda/suggest-task/node";
import { client } from "./client.js";

const anthropic = new Anthropic(); // reads ANTHROPIC_API_KEY
const model = "claude-sonnet-4-5";
const tools = [anthropicTool(), anthropicTool(withdrawSuggestionTool)];
const messages: Anthropic.MessageParam[] = [];
let cursor = ""; // keep it with the chat: asked again, ListSettlements answers only what is new

/** One model turn of a chat whose agent may offer (suggest_task) and withdraw follow-ups. */
export async function turn(sessionId: string, turnId: string, text: string): Promise<void> {
  const report = await client.listSettlements({ sessionId, after: cursor });
  cursor = report.cursor;
  const notes = settlementNotes(report.settlements); // e.g. You withdrew your suggestion "Fix CI".
  messages.push({ role: "user", content: [...notes, text].join("\n") });

  const response = await anthropic.messages.create({ model, max_tokens: 1024, messages, tools });
  const results: Anthropic.ToolResultBlockParam[] = [];
  for (const block of response.content) {
    if (block.type !== "tool_use") continue;
    const context = { sessionId, turnId, role: AgentRole.TOP_LEVEL, toolCallId: block.id };
    const call =
      block.name === withdrawSuggestionTool.name ? callWithdrawSuggestionTool : callSuggestTaskTool;
    const result = await call(client, block.input, context); // the success line or the refusal
    results.push({
      type: "tool_result",
      tool_use_id: block.id,
      content: result.content,
      is_error: result.isError,
    });
  }
  messages.push({ role: "assistant", content: response.content });
  if (results.length > 0) messages.push({ role: "user", content: results });
}
