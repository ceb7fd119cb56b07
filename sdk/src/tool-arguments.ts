import { Code, ConnectError } from "@connectrpc/connect";
import type { ToolDefinition } from "./tool.js";

/**
 * Reads a tool call's arguments for `definition`, given as the parsed object (Anthropic's
 * `input`, MCP's `arguments`) or as the JSON text (OpenAI's `function.arguments`): one
 * string per declared argument, a missing or `null` one read as empty (which the service
 * refuses with its `must not be empty` text), unknown keys ignored.
 *
 * @throws ConnectError INVALID_ARGUMENT when the arguments are not a JSON object or a
 *   declared argument is not a string, naming the tool.
 */
export function readToolArguments(
  definition: ToolDefinition,
  args: unknown,
): Readonly<Record<string, string>> {
  const tool = definition.name;
  let value = args;
  if (typeof args === "string") {
    try {
      value = args.trim() === "" ? {} : JSON.parse(args);
    } catch (err) {
      const message = `${tool}: the arguments are not valid JSON`;
      throw new ConnectError(message, Code.InvalidArgument, undefined, undefined, err);
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConnectError(`${tool}: the arguments must be a JSON object`, Code.InvalidArgument);
  }
  const record = value as Readonly<Record<string, unknown>>;
  const read: Record<string, string> = {};
  for (const name of definition.inputSchema.required) {
    const field = record[name];
    if (field !== undefined && field !== null && typeof field !== "string") {
      throw new ConnectError(`${tool}: ${name} must be a string`, Code.InvalidArgument);
    }
    read[name] = field ?? "";
  }
  return read;
}
