import type { MessageInitShape } from "@bufbuild/protobuf";
import { type CallOptions, Code, ConnectError } from "@connectrpc/connect";
import type {
  Suggestion,
  SuggestTaskRefusal,
  ToolCallContextSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestionClient } from "./clients.js";
import { SuggestTaskRefusalError, toSuggestionError } from "./errors.js";
import { suggestTaskTool } from "./tool.js";
import { readToolArguments } from "./tool-arguments.js";

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
 * Refused: `content` is the contract's refusal text and `isError` is true, which maps onto
 * Anthropic's `tool_result.is_error` and MCP's `CallToolResult.isError`. Among the field
 * refusals: a field that shows nothing (white space, format or control characters, blank
 * fillers) is `must not be empty` (`RefusalReason.FIELD_EMPTY`); a control character in
 * any field (tab, line feed and carriage return allowed in `brief`), or a bidirectional
 * override in `title` or `tldr`, is `must not contain control characters`
 * (`RefusalReason.FIELD_CONTROL_CHARACTER`).
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
 * reads as empty, which the service refuses with the contract's `must not be empty` text;
 * unknown keys are ignored, since the service checks only the declared fields.
 *
 * @throws ConnectError INVALID_ARGUMENT when the arguments are not a JSON object or a field
 *   is not a string: those are not refusals the contract names.
 */
export function readSuggestTaskArguments(args: unknown): SuggestTaskArguments {
  const read = readToolArguments(suggestTaskTool, args);
  return { title: read.title ?? "", tldr: read.tldr ?? "", brief: read.brief ?? "" };
}

/** What both tools' RPCs answer: the suggestion and the line the model sees. */
interface ToolResponse {
  readonly suggestion?: Suggestion | undefined;
  readonly result: string;
}

/**
 * Runs one tool RPC and answers what the model should see: the success line, or a
 * refusal's exact text marked as an error. Any other failure is thrown as it is (a
 * typed error where the service gave details), for the runtime to handle. Shared by
 * `callSuggestTaskTool` and `callWithdrawSuggestionTool`.
 */
export async function runToolCall(
  rpc: string,
  call: () => Promise<ToolResponse>,
): Promise<SuggestTaskToolResult> {
  try {
    const response = await call();
    if (response.suggestion === undefined) {
      throw new ConnectError(`${rpc} answered no suggestion`, Code.Internal);
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

/**
 * Runs one suggest_task tool call for an agent runtime: reads the model's arguments
 * (`readSuggestTaskArguments`), calls SuggestTask with the runtime's `context`, and answers
 * what the model should see: the success line, or the refusal's exact text marked as an
 * error, the duplicate refusals included (a title that repeats an open offer of the chat,
 * or one the person dismissed: `refusal.reason` DUPLICATE_OPEN or DUPLICATE_DISMISSED), so
 * the model hears not to offer it again. Any other failure (a malformed request, the
 * service unavailable) is thrown as it is, for the runtime to handle; it is not the
 * model's to read.
 *
 * ```ts
 * const result = await callSuggestTaskTool(client, block.input, {
 *   sessionId, turnId, role: AgentRole.TOP_LEVEL, toolCallId: block.id,
 * });
 * // { type: "tool_result", tool_use_id: block.id, content: result.content, is_error: result.isError }
 * ```
 */
export function callSuggestTaskTool(
  client: Pick<SuggestionClient, "suggestTask">,
  args: unknown,
  context: ToolCallContextInit,
  callOptions?: CallOptions,
): Promise<SuggestTaskToolResult> {
  const request = { context, args: readSuggestTaskArguments(args) };
  return runToolCall("SuggestTask", () => client.suggestTask(request, callOptions));
}
