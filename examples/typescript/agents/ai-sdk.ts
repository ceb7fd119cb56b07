import { AgentRole } from "@oda/suggest-task";
import { suggestionAiTools } from "@oda/suggest-task/ai-sdk";
import { generateText, type LanguageModel, stepCountIs } from "ai";
import { client } from "../client.js";

/** The chat and the model turn the tools act for: the application's per-run values. */
interface Turn {
  readonly sessionId: string;
  readonly turnId: string;
}

// { suggest_task, withdraw_suggestion }: the context comes from `experimental_context`,
// which the model never sees; the tool call's id is the AI SDK's `toolCallId`.
const tools = suggestionAiTools(client, ({ experimental_context }) => {
  const turn = experimental_context as Turn;
  return { sessionId: turn.sessionId, turnId: turn.turnId, role: AgentRole.TOP_LEVEL };
});

/** One model turn with the tools, on any AI SDK model (`openai("gpt-5")`, `anthropic(...)`). */
export async function runTurn(model: LanguageModel, turn: Turn, prompt: string): Promise<string> {
  const result = await generateText({
    model,
    prompt,
    tools,
    stopWhen: stepCountIs(8),
    experimental_context: turn,
  });
  // Each call's output: { isError: false, content, suggestionId } or { isError: true, content, reason }.
  for (const step of result.steps) for (const r of step.toolResults) console.log(r.output);
  return result.text;
}
