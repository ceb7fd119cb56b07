import { AgentRole } from "@oda/suggest-task";
import {
  type AgentContextOf,
  suggestTaskAgentTool,
  withdrawSuggestionAgentTool,
} from "@oda/suggest-task/openai-agents";
import { Agent, run } from "@openai/agents";
import { client } from "../client.js";

/** The chat and the model turn the tools act for: the run's context, which the model never sees. */
interface Turn {
  readonly sessionId: string;
  readonly turnId: string;
}

const contextOf: AgentContextOf<Turn> = ({ context }) => ({
  sessionId: context.sessionId,
  turnId: context.turnId,
  role: AgentRole.TOP_LEVEL, // an agent run as a tool of another (agent.asTool) is HELPER
});

export const agent = new Agent<Turn>({
  name: "coder",
  instructions: "Do what the user asks. Offer out-of-scope follow-ups with suggest_task.",
  model: "gpt-5",
  tools: [suggestTaskAgentTool(client, contextOf), withdrawSuggestionAgentTool(client, contextOf)],
});

/** One model turn; needs OPENAI_API_KEY (the Agents SDK's default model provider). */
export async function runTurn(turn: Turn, input: string): Promise<string | undefined> {
  const result = await run(agent, input, { context: turn });
  return result.finalOutput;
}
