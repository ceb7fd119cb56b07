import { type DescMessage, getOption, hasOption } from "@bufbuild/protobuf";
import {
  SuggestTaskArgsSchema,
  WithdrawSuggestionArgsSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { tool, tool_field } from "../../gen/oda/suggest/v1/tool_options_pb.js";

/**
 * A tool's descriptions and field limits are declared once, in the proto's custom
 * options (`(oda.suggest.v1.tool)` on the arguments message, `(tool_field)` on each
 * field). The service validates with what this module reads from them; the SDK reads
 * the same options from the same gen/ for the JSON schema a model sees
 * (sdk/src/tool-declaration.ts), so a change to the proto moves both
 * (test/sdk/sdk-tool.test.ts edits an option and sees both follow).
 */

/** One tool argument as the proto declares it. */
export interface ToolFieldSpec {
  /** The proto field's name, which is also the argument's name ("title"). */
  readonly name: string;
  /** The field's JSON name. */
  readonly jsonName: string;
  /** The description the model sees. */
  readonly description: string;
  /** The most Unicode code points the trimmed value may hold. */
  readonly maxCodePoints: number;
}

/** A tool as the proto declares it on its arguments message. */
export interface ToolSpec {
  /** The tool's name as a model calls it ("suggest_task"). */
  readonly name: string;
  /** The tool's description, the contract's text. */
  readonly description: string;
  /** The arguments in declaration order, which is also the order they are checked in. */
  readonly fields: readonly ToolFieldSpec[];
}

/**
 * Reads a tool's name, description and argument limits from its arguments message (a
 * generated descriptor, or one loaded from a descriptor set).
 *
 * @throws Error when the message or one of its fields declares no option.
 */
export function toolSpecOf(message: DescMessage): ToolSpec {
  if (!hasOption(message, tool)) {
    throw new Error(`${message.typeName} declares no (oda.suggest.v1.tool) option`);
  }
  const spec = getOption(message, tool);
  const fields = message.fields.map((field) => {
    if (!hasOption(field, tool_field)) {
      throw new Error(`${message.typeName}.${field.name} declares no (tool_field) option`);
    }
    const option = getOption(field, tool_field);
    return Object.freeze({
      name: field.name,
      jsonName: field.jsonName,
      description: option.description,
      maxCodePoints: option.maxCodePoints,
    });
  });
  return Object.freeze({ name: spec.name, description: spec.description, fields });
}

/** The suggest_task tool as `SuggestTaskArgs` declares it. */
export const suggestTaskTool: ToolSpec = toolSpecOf(SuggestTaskArgsSchema);

/** The withdraw_suggestion tool as `WithdrawSuggestionArgs` declares it. */
export const withdrawSuggestionTool: ToolSpec = toolSpecOf(WithdrawSuggestionArgsSchema);

/** One string argument of a tool as MCP's `tools/list` shows it (JSON Schema). */
export type McpToolProperty = {
  readonly type: "string";
  readonly description: string;
  /** JSON Schema counts code points, as the field checks do. */
  readonly maxLength: number;
};

/**
 * A tool as the service's MCP endpoint lists it: name, description, JSON Schema. Type
 * aliases, not interfaces: the MCP SDK's types have index signatures, which only an
 * alias satisfies.
 */
export type McpToolEntry = {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: {
    readonly type: "object";
    readonly properties: Readonly<Record<string, McpToolProperty>>;
    readonly required: string[];
    readonly additionalProperties: false;
  };
};

/**
 * `spec` as an MCP `tools/list` entry: one required string property per declared field,
 * its description and limit, no other property allowed. The same shape, key for key, as
 * the SDK's `mcpTool()` builds from the same proto options (test/mcp/sdk-parity.test.ts
 * compares the two).
 */
export function mcpToolEntry(spec: ToolSpec): McpToolEntry {
  const properties: Record<string, McpToolProperty> = {};
  for (const field of spec.fields) {
    properties[field.name] = {
      type: "string",
      description: field.description,
      maxLength: field.maxCodePoints,
    };
  }
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: {
      type: "object",
      properties,
      required: spec.fields.map((field) => field.name),
      additionalProperties: false,
    },
  };
}
