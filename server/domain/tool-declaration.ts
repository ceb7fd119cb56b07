import { WithdrawSuggestionArgsSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  readToolDeclaration,
  suggestTaskDeclaration,
  type ToolArgument,
  type ToolDeclaration,
} from "../../sdk/src/tool-declaration.js";

/**
 * The reading of a tool's descriptions and limits from the proto's custom options lives in
 * the SDK (sdk/src/tool-declaration.ts), so that the service's validation and the SDK's JSON
 * schema are built by the same code from the same options. These are the service's names
 * for it.
 */

/** One tool argument as the proto declares it. */
export type ToolFieldSpec = ToolArgument;

/** A tool as the proto declares it on its arguments message. */
export type ToolSpec = ToolDeclaration;

/** Reads a tool's name, description and argument limits from its arguments message. */
export const toolSpecOf: (message: Parameters<typeof readToolDeclaration>[0]) => ToolSpec =
  readToolDeclaration;

/** The suggest_task tool as declared on `SuggestTaskArgs`. */
export const suggestTaskTool: ToolSpec = suggestTaskDeclaration;

/** The withdraw_suggestion tool as declared on `WithdrawSuggestionArgs`. */
export const withdrawSuggestionTool: ToolSpec = toolSpecOf(WithdrawSuggestionArgsSchema);
