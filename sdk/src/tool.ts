import type { DescMessage } from "@bufbuild/protobuf";
import { SuggestTaskArgsSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { readToolDeclaration } from "./tool-declaration.js";

/** The JSON Schema of one string argument: its description and limit from the proto. */
export interface ToolStringProperty {
  readonly type: "string";
  readonly description: string;
  /** JSON Schema counts characters as Unicode code points, as the service does. */
  readonly maxLength: number;
}

/** The JSON Schema of a tool's argument object: every argument required, no others allowed. */
export interface ToolInputSchema {
  readonly type: "object";
  readonly properties: Readonly<Record<string, ToolStringProperty>>;
  readonly required: readonly string[];
  readonly additionalProperties: false;
}

/** A tool as model APIs take it, before a vendor's wrapping: name, description, JSON Schema. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ToolInputSchema;
}

/**
 * Builds a tool's definition from its arguments message: the name and description of its
 * `(oda.suggest.v1.tool)` option, and one required string property per field with the
 * description and `maxLength` of its `(oda.suggest.v1.tool_field)` option, in declaration
 * order. Nothing is restated by hand, so editing the proto option is the only way to change
 * what a model sees (test/sdk/sdk-tool.test.ts builds it from an edited proto).
 */
export function toolDefinition(message: DescMessage): ToolDefinition {
  const declared = readToolDeclaration(message);
  const properties: Record<string, ToolStringProperty> = {};
  for (const field of declared.fields) {
    properties[field.name] = Object.freeze({
      type: "string",
      description: field.description,
      maxLength: field.maxCodePoints,
    });
  }
  return Object.freeze({
    name: declared.name,
    description: declared.description,
    inputSchema: Object.freeze({
      type: "object",
      properties: Object.freeze(properties),
      required: Object.freeze(declared.fields.map((field) => field.name)),
      additionalProperties: false,
    }),
  });
}

/**
 * The suggest_task tool: `name` "suggest_task", the tool's description, and the JSON
 * Schema of `title`, `tldr` and `brief` (`maxLength` 60, 240 and 4000), all required.
 */
export const suggestTaskTool: ToolDefinition = /*@__PURE__*/ toolDefinition(SuggestTaskArgsSchema);

/**
 * A tool's JSON Schema as the vendors' SDKs type it (`@anthropic-ai/sdk`, the MCP SDK):
 * `required` a mutable `string[]`, which a `readonly string[]` is not assignable to. Each
 * adapter gives a fresh copy, so the frozen definition stays untouched. A type alias, not an
 * interface: the vendors' types have an index signature, which only an alias satisfies.
 */
export type VendorInputSchema = Omit<ToolInputSchema, "required"> & {
  readonly required: string[];
};

function vendorSchema(schema: ToolInputSchema): VendorInputSchema {
  return { ...schema, required: [...schema.required] };
}

/** A tool in the Anthropic Messages API's `tools` array. */
export interface AnthropicTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: VendorInputSchema;
}

/** A tool in the OpenAI Chat Completions API's `tools` array (a function tool). */
export interface OpenAIFunctionTool {
  readonly type: "function";
  readonly function: {
    readonly name: string;
    readonly description: string;
    readonly parameters: ToolInputSchema;
  };
}

/** A tool as an MCP server lists it in its `tools/list` result. */
export interface McpTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: VendorInputSchema;
}

/** The tool for the Anthropic Messages API: `{ name, description, input_schema }`. */
export function anthropicTool(definition: ToolDefinition = suggestTaskTool): AnthropicTool {
  return {
    name: definition.name,
    description: definition.description,
    input_schema: vendorSchema(definition.inputSchema),
  };
}

/**
 * The tool for OpenAI function calling: `{ type: "function", function: { name, description,
 * parameters } }`. `strict` is left unset: OpenAI's strict mode accepts only a subset of JSON
 * Schema, and the service checks every limit itself whatever the model was held to.
 */
export function openAITool(definition: ToolDefinition = suggestTaskTool): OpenAIFunctionTool {
  return {
    type: "function",
    function: {
      name: definition.name,
      description: definition.description,
      parameters: definition.inputSchema,
    },
  };
}

/** The tool as an MCP server lists it: `{ name, description, inputSchema }`. */
export function mcpTool(definition: ToolDefinition = suggestTaskTool): McpTool {
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: vendorSchema(definition.inputSchema),
  };
}
