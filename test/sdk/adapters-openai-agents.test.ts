import {
  Agent,
  type AgentOutputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  run,
  setTracingDisabled,
  Usage,
} from "@openai/agents";
import { beforeAll, describe, expect, test } from "vitest";
import { AgentRole, suggestTaskTool, withdrawSuggestionTool } from "../../sdk/src/node.js";
import {
  type AgentContextOf,
  suggestTaskAgentTool,
  withdrawSuggestionAgentTool,
} from "../../sdk/src/openai-agents.js";
import { expectOneOfferPerTurn, TWO_OFFERS, useAdapterService } from "../support/adapters.js";
import { successText } from "../support/suggest.js";

/*
 * `@oda/suggest-task/openai-agents` in the Agents SDK's own loop (`run` with a context),
 * driven by a scripted `Model` (the Agents SDK's model interface, implemented here),
 * against a real service.
 */

/** A model that answers its script in order and keeps every request it was sent. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly script: AgentOutputItem[][]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const output = this.script[this.requests.length - 1];
    if (output === undefined) throw new Error("the script has no step left");
    return { usage: new Usage(), output };
  }

  // biome-ignore lint/correctness/useYield: the tests run without streaming.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the tests run without streaming");
  }
}

/** A model step that calls suggest_task: `[callId, arguments]` each. */
function callsSuggestTask(...calls: [string, unknown][]): AgentOutputItem[] {
  return calls.map(([callId, args]) => ({
    type: "function_call",
    callId,
    name: "suggest_task",
    arguments: JSON.stringify(args),
    status: "completed",
  }));
}

/** A model step that ends the turn with text. */
function answers(text: string): AgentOutputItem[] {
  return [
    {
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text }],
    },
  ];
}

/** The application's per-run context, given to `run(agent, input, { context })`. */
interface Chat {
  readonly sessionId: string;
  readonly turnId: string;
}

const contextOf: AgentContextOf<Chat> = ({ context }) => ({
  sessionId: context.sessionId,
  turnId: context.turnId,
  role: AgentRole.TOP_LEVEL,
});

/** The outputs of the function calls the model was sent back in a request. */
function toolOutputs(request: ModelRequest | undefined): { content: string }[] {
  const input = typeof request?.input === "string" ? [] : (request?.input ?? []);
  return input.flatMap((item) => {
    if (item.type !== "function_call_result") return [];
    const { output } = item;
    if (typeof output === "string") return [{ content: output }];
    if (Array.isArray(output) || output.type !== "text") throw new Error("not a text output");
    return [{ content: output.text }];
  });
}

describe("the OpenAI Agents SDK adapter", () => {
  const service = useAdapterService();
  beforeAll(() => setTracingDisabled(true));

  function agent(model: Model) {
    return new Agent<Chat>({
      name: "coder",
      instructions: "Fix what you are asked to; offer what is out of scope.",
      model,
      tools: [
        suggestTaskAgentTool(service.client, contextOf),
        withdrawSuggestionAgentTool(service.client, contextOf),
      ],
    });
  }

  test("the model is handed the SDK's definitions of both tools", async () => {
    const model = new ScriptedModel([answers("Nothing to offer.")]);
    const chat = { sessionId: "unused", turnId: "turn-1" };
    await run(agent(model), "Fix the upload bug.", { context: chat });
    const handed = model.requests[0]?.tools.map((tool) =>
      tool.type === "function"
        ? { name: tool.name, description: tool.description, inputSchema: tool.parameters }
        : tool,
    );
    expect(handed).toEqual([
      { ...suggestTaskTool, inputSchema: { ...suggestTaskTool.inputSchema } },
      { ...withdrawSuggestionTool, inputSchema: { ...withdrawSuggestionTool.inputSchema } },
    ]);
    expect(model.requests[0]?.tools.map((tool) => "strict" in tool && tool.strict)).toEqual([
      false,
      false,
    ]);
  });

  test("two offers in one turn: one recorded, the other refused with the reference's text", async () => {
    const sessionId = await service.chat("agents");
    const [first, second] = TWO_OFFERS;
    const model = new ScriptedModel([
      callsSuggestTask(["call-1", first], ["call-2", second]),
      answers("Offered a follow-up."),
    ]);
    const result = await run(agent(model), "Fix the upload bug.", {
      context: { sessionId, turnId: "turn-1" },
    });
    expect(result.finalOutput).toBe("Offered a follow-up.");
    const read = toolOutputs(model.requests[1]);
    expect(read).toHaveLength(2);
    expectOneOfferPerTurn(read, await service.recorded(sessionId), "turn-1");
  });

  test("the call's id is the Agents SDK's callId: a repeated call answers the first result", async () => {
    const sessionId = await service.chat("agents-retry");
    const [first] = TWO_OFFERS;
    const model = new ScriptedModel([
      callsSuggestTask(["call-1", first]),
      callsSuggestTask(["call-1", first]),
      answers("Done."),
    ]);
    const result = await run(agent(model), "Fix the upload bug.", {
      context: { sessionId, turnId: "turn-1" },
    });
    // The run's items (the model's next request holds one output per call id).
    const outputs = result.newItems.flatMap((item) =>
      item.type === "tool_call_output_item" ? [item.output] : [],
    );
    expect(outputs).toEqual([successText(first.title), successText(first.title)]);
    expect(await service.recorded(sessionId)).toHaveLength(1);
  });

  test("arguments the schema would refuse reach the service, which answers its own text", async () => {
    const sessionId = await service.chat("agents-long");
    const model = new ScriptedModel([
      callsSuggestTask(["call-1", { title: "x".repeat(61), tldr: "W", brief: "B" }]),
      answers("Done."),
    ]);
    await run(agent(model), "Fix the upload bug.", { context: { sessionId, turnId: "turn-1" } });
    expect(toolOutputs(model.requests[1])).toEqual([
      { content: "suggest_task: title must be at most 60 characters (got 61)" },
    ]);
    expect(await service.recorded(sessionId)).toEqual([]);
  });
});
