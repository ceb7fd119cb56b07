import type { MessageInitShape } from "@bufbuild/protobuf";
import { type CallOptions, Code, ConnectError } from "@connectrpc/connect";
import type {
  Suggestion,
  SuggestTaskRefusal,
  ToolCallContextSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestionClient } from "./clients.js";
import { SuggestTaskRefusalError, toSuggestionError } from "./errors.js";

/** The runtime's side of a tool call: session, turn, agent role and the call's id. */
export type ToolCallContextInit = MessageInitShape<typeof ToolCallContextSchema>;

/** suggest_task's arguments as the model wrote them, read into strings. */
export interface SuggestTaskArguments {
  readonly title: string;
  readonly tldr: string;
  readonly brief: string;
}

/**
 * What the model should see as the tool's result. Recorded: `content` is the success line
 * (`Suggested "<title>". The user decides whether to start it; do not start it yourself.`).
 * Refused: `content` is the reference's refusal text and `isError` is true, which maps onto
 * Anthropic's `tool_result.is_error` and MCP's `CallToolResult.isError`.
 */
export type SuggestTaskToolResult =
  | {
      readonly isError: false;
      readonly content: string;
      /** The offer as recorded. */
      readonly suggestion: Suggestion;
    }
  | {
      readonly isError: true;
      readonly content: string;
      /** Why the call was refused. */
      readonly refusal: SuggestTaskRefusal;
    };

/**
 * Reads a model's tool-call arguments, given as the parsed object (Anthropic's `input`, MCP's
 * `arguments`) or as the JSON text (OpenAI's `function.arguments`). A missing or `null` field
 * reads as empty, which the service refuses with the reference's `must not be empty` text;
 * unknown keys are ignored, since the service checks only the declared fields.
 *
 * @throws ConnectError INVALID_ARGUMENT when the arguments are not a JSON object or a field
 *   is not a string: those are not refusals the reference names.
 */
export function readSuggestTaskArguments(args: unknown): SuggestTaskArguments {
  let value = args;
  if (typeof args === "string") {
    try {
      value = args.trim() === "" ? {} : JSON.parse(args);
    } catch (err) {
      throw new ConnectError(
        "suggest_task: the arguments are not valid JSON",
        Code.InvalidArgument,
        undefined,
        undefined,
        err,
      );
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConnectError(
      "suggest_task: the arguments must be a JSON object",
      Code.InvalidArgument,
    );
  }
  const record = value as Readonly<Record<string, unknown>>;
  return {
    title: stringArgument(record, "title"),
    tldr: stringArgument(record, "tldr"),
    brief: stringArgument(record, "brief"),
  };
}

function stringArgument(record: Readonly<Record<string, unknown>>, name: string): string {
  const value = record[name];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") {
    throw new ConnectError(`suggest_task: ${name} must be a string`, Code.InvalidArgument);
  }
  return value;
}

/**
 * Runs one suggest_task tool call for an agent runtime: reads the model's arguments
 * (`readSuggestTaskArguments`), calls SuggestTask with the runtime's `context`, and answers
 * what the model should see: the success line, or the refusal's exact text marked as an
 * error. Any other failure (a malformed request, the service unavailable) is thrown as it
 * is, for the runtime to handle; it is not the model's to read.
 *
 * ```ts
 * const result = await callSuggestTaskTool(client, block.input, {
 *   sessionId, turnId, role: AgentRole.TOP_LEVEL, toolCallId: block.id,
 * });
 * // { type: "tool_result", tool_use_id: block.id, content: result.content, is_error: result.isError }
 * ```
 */
export async function callSuggestTaskTool(
  client: Pick<SuggestionClient, "suggestTask">,
  args: unknown,
  context: ToolCallContextInit,
  callOptions?: CallOptions,
): Promise<SuggestTaskToolResult> {
  const request = { context, args: readSuggestTaskArguments(args) };
  try {
    const response = await client.suggestTask(request, callOptions);
    if (response.suggestion === undefined) {
      throw new ConnectError("SuggestTask answered no suggestion", Code.Internal);
    }
    return { isError: false, content: response.result, suggestion: response.suggestion };
  } catch (err) {
    const error = toSuggestionError(err);
    if (error instanceof SuggestTaskRefusalError) {
      return { isError: true, content: error.rawMessage, refusal: error.payload };
    }
    throw error;
  }
}
