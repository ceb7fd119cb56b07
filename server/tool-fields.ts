import { type DescMessage, getOption, hasOption } from "@bufbuild/protobuf";
import { SuggestTaskArgsSchema } from "../gen/oda/suggest/v1/suggestion_pb.js";
import { tool, tool_field } from "../gen/oda/suggest/v1/tool_options_pb.js";

/** One tool argument as the proto declares it. */
export interface ToolFieldSpec {
  /** The proto field's name, which is also the argument's name ("title"). */
  readonly name: string;
  /** The JSON name a model writes. */
  readonly jsonName: string;
  /** The description the model sees. */
  readonly description: string;
  /** The most code points the trimmed value may hold. */
  readonly maxCodePoints: number;
}

/** A tool as the proto declares it on its arguments message. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  /** The arguments in declaration order, which is also the order they are checked in. */
  readonly fields: readonly ToolFieldSpec[];
}

/**
 * Reads a tool's name, description and argument limits from the custom options of its
 * arguments message, so that they are written once, in the proto.
 */
export function toolSpecOf(message: DescMessage): ToolSpec {
  if (!hasOption(message, tool)) {
    throw new Error(`${message.typeName} declares no (oda.suggest.v1.tool) option`);
  }
  const spec = getOption(message, tool);
  const fields = message.fields.map((field) => {
    if (!hasOption(field, tool_field)) {
      throw new Error(`${field.parent.typeName}.${field.name} declares no (tool_field) option`);
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

/** The suggest_task tool as declared on `SuggestTaskArgs`. */
export const suggestTaskTool: ToolSpec = toolSpecOf(SuggestTaskArgsSchema);
