import type { LanguageModelV3GenerateResult } from "@ai-sdk/provider";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, test } from "vitest";
import {
  type AiSdkContextOf,
  type SuggestionToolOutput,
  suggestionAiTools,
  suggestTaskAiTool,
} from "../../sdk/src/ai-sdk.js";
import { AgentRole, suggestTaskTool, withdrawSuggestionTool } from "../../sdk/src/node.js";
import { expectOneOfferPerTurn, TWO_OFFERS, useAdapterService } from "../support/adapters.js";
import { successText } from "../support/suggest.js";

/*
 * `@oda/suggest-task/ai-sdk` in the AI SDK's own agent loop (`generateText` with tools and
 * `stopWhen`), driven by its test model `MockLanguageModelV3`, against a real service.
 */

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model step that calls tools: `[toolCallId, toolName, arguments]` each. */
function callsTools(...calls: [string, string, unknown][]): LanguageModelV3GenerateResult {
  return {
    content: calls.map(([toolCallId, toolName, args]) => ({
      type: "tool-call" as const,
      toolCallId,
      toolName,
      input: JSON.stringify(args),
    })),
    finishReason: { unified: "tool-calls", raw: undefined },
    usage: USAGE,
    warnings: [],
  };
}

/** A model step that ends the turn with text. */
function answers(text: string): LanguageModelV3GenerateResult {
  return {
    content: [{ type: "text", text }],
    finishReason: { unified: "stop", raw: undefined },
    usage: USAGE,
    warnings: [],
  };
}

/** The application's per-run context, as it passes it in `experimental_context`. */
interface Chat {
  readonly sessionId: string;
  readonly turnId: string;
}

const contextOf: AiSdkContextOf = ({ experimental_context }) => {
  const chat = experimental_context as Chat;
  return { sessionId: chat.sessionId, turnId: chat.turnId, role: AgentRole.TOP_LEVEL };
};

describe("the AI SDK adapter", () => {
  const service = useAdapterService();

  test("the model is handed the SDK's definitions of both tools", async () => {
    const model = new MockLanguageModelV3({ doGenerate: [answers("Nothing to offer.")] });
    await generateText({
      model,
      prompt: "Fix the upload bug.",
      tools: suggestionAiTools(service.client, contextOf),
    });
    const handed = model.doGenerateCalls[0]?.tools?.map((tool) =>
      tool.type === "function"
        ? { name: tool.name, description: tool.description, inputSchema: tool.inputSchema }
        : tool,
    );
    expect(handed).toEqual([
      { ...suggestTaskTool, inputSchema: { ...suggestTaskTool.inputSchema } },
      { ...withdrawSuggestionTool, inputSchema: { ...withdrawSuggestionTool.inputSchema } },
    ]);
  });

  test("two offers in one turn: one recorded, the other refused with the reference's text", async () => {
    const sessionId = await service.chat("ai-sdk");
    const [first, second] = TWO_OFFERS;
    const model = new MockLanguageModelV3({
      doGenerate: [
        callsTools(["call-1", "suggest_task", first], ["call-2", "suggest_task", second]),
        answers("Offered a follow-up."),
      ],
    });
    const result = await generateText({
      model,
      prompt: "Fix the upload bug.",
      tools: { suggest_task: suggestTaskAiTool(service.client, contextOf) },
      stopWhen: stepCountIs(5),
      experimental_context: { sessionId, turnId: "turn-1" } satisfies Chat,
    });
    expect(result.text).toBe("Offered a follow-up.");
    expect(result.steps).toHaveLength(2);

    // What the model read in its second step: the tool results as the AI SDK sent them.
    const prompt = model.doGenerateCalls[1]?.prompt ?? [];
    const read = prompt.flatMap((message) =>
      message.role === "tool"
        ? message.content.flatMap((part) =>
            part.type === "tool-result" &&
            (part.output.type === "text" || part.output.type === "error-text")
              ? [{ content: part.output.value, isError: part.output.type === "error-text" }]
              : [],
          )
        : [],
    );
    expect(read).toHaveLength(2);
    const offer = expectOneOfferPerTurn(read, await service.recorded(sessionId), "turn-1");

    // The application's side: JSON-safe outputs with the suggestion's id or the reason.
    const outputs = result.steps[0]?.toolResults.map((r) => r.output);
    expect(outputs).toContainEqual({
      isError: false,
      content: successText(offer.title),
      suggestionId: offer.id,
    });
    expect(JSON.parse(JSON.stringify(outputs))).toEqual(outputs);
  });

  test("the call's id is the AI SDK's toolCallId: a repeated call answers the first result", async () => {
    const sessionId = await service.chat("ai-sdk-retry");
    const [first] = TWO_OFFERS;
    const model = new MockLanguageModelV3({
      doGenerate: [
        callsTools(["call-1", "suggest_task", first]),
        callsTools(["call-1", "suggest_task", first]),
        answers("Done."),
      ],
    });
    const result = await generateText({
      model,
      prompt: "Fix the upload bug.",
      tools: { suggest_task: suggestTaskAiTool(service.client, contextOf) },
      stopWhen: stepCountIs(5),
      experimental_context: { sessionId, turnId: "turn-1" } satisfies Chat,
    });
    const contents = result.steps.flatMap((s) =>
      s.toolResults.map((r) => (r.output as SuggestionToolOutput).content),
    );
    expect(contents).toEqual([successText(first.title), successText(first.title)]);
    expect(await service.recorded(sessionId)).toHaveLength(1);
  });

  test("arguments the schema would refuse reach the service, which answers its own text", async () => {
    const sessionId = await service.chat("ai-sdk-long");
    const model = new MockLanguageModelV3({
      doGenerate: [
        callsTools(["call-1", "suggest_task", { title: "x".repeat(61), tldr: "W", brief: "B" }]),
        answers("Done."),
      ],
    });
    const result = await generateText({
      model,
      prompt: "Fix the upload bug.",
      tools: { suggest_task: suggestTaskAiTool(service.client, contextOf) },
      stopWhen: stepCountIs(5),
      experimental_context: { sessionId, turnId: "turn-1" } satisfies Chat,
    });
    expect(result.steps[0]?.toolResults.map((r) => r.output)).toEqual([
      {
        isError: true,
        content: "suggest_task: title must be at most 60 characters (got 61)",
        reason: expect.any(Number),
      },
    ]);
    expect(await service.recorded(sessionId)).toEqual([]);
  });
});
