import { type DescMessage, getOption, hasOption } from "@bufbuild/protobuf";
import { SuggestTaskArgsSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { tool, tool_field } from "../../gen/oda/suggest/v1/tool_options_pb.js";

/** One tool argument as the proto declares it with `(oda.suggest.v1.tool_field)`. */
export interface ToolArgument {
  /** The proto field's name, which is also the argument's name a model writes ("title"). */
  readonly name: string;
  /** The field's JSON name (the same as `name` for suggest_task's arguments). */
  readonly jsonName: string;
  /** The description the model sees. */
  readonly description: string;
  /** The most Unicode code points the trimmed value may hold. */
  readonly maxCodePoints: number;
}

/** A tool as the proto declares it on its arguments message with `(oda.suggest.v1.tool)`. */
export interface ToolDeclaration {
  /** The tool's name as a model calls it ("suggest_task"). */
  readonly name: string;
  /** The tool's description, the contract's text. */
  readonly description: string;
  /** The arguments in declaration order, which is also the order the service checks them in. */
  readonly fields: readonly ToolArgument[];
}

/**
 * Reads a tool's name, description and argument limits from the custom options of its
 * arguments message, so that they are written once, in the proto: the service validates
 * with what this returns, and the SDK's JSON schema is built from it. Takes any message
 * descriptor (a generated one, or one loaded from a descriptor set) so that a test can
 * change nothing but the proto option and see both follow (test/sdk/sdk-tool.test.ts).
 *
 * @throws Error when the message or one of its fields declares no option.
 */
export function readToolDeclaration(message: DescMessage): ToolDeclaration {
  if (!hasOption(message, tool)) {
    throw new Error(`${message.typeName} declares no (oda.suggest.v1.tool) option`);
  }
  const spec = getOption(message, tool);
  const fields = message.fields.map((field) => {
    if (!hasOption(field, tool_field)) {
      throw new Error(
        `${message.typeName}.${field.name} declares no (oda.suggest.v1.tool_field) option`,
      );
    }
    const option = getOption(field, tool_field);
    return Object.freeze({
      name: field.name,
      jsonName: field.jsonName,
      description: option.description,
      maxCodePoints: option.maxCodePoints,
    });
  });
  return Object.freeze({
    name: spec.name,
    description: spec.description,
    fields: Object.freeze(fields),
  });
}

/** The suggest_task tool as `SuggestTaskArgs` declares it. */
export const suggestTaskDeclaration: ToolDeclaration = readToolDeclaration(SuggestTaskArgsSchema);
