import { getOption, type MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import {
  SuggestionErrorCode as CodeEnum,
  SuggestionErrorCodeSchema,
  type SuggestionErrorSchema,
  SuggestionState,
  WorkspaceMissingReason,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { error_code } from "../../gen/oda/suggest/v1/tool_options_pb.js";

/** The text of a failure code as the proto's `(error_code)` option declares it. */
function codeText(value: CodeEnum): string {
  const described = SuggestionErrorCodeSchema.value[value];
  if (described === undefined) throw new Error(`no SuggestionErrorCode ${value}`);
  return getOption(described, error_code);
}

/**
 * The reference's failure codes of the list, settle and start RPCs. Their text is
 * declared once, in the proto (`SuggestionErrorCode` and its `(error_code)` option),
 * which the SDK reads too.
 */
export const SuggestionErrorCode = Object.freeze({
  NotFound: codeText(CodeEnum.NOT_FOUND) as "task-suggestion/not-found",
  NotOpen: codeText(CodeEnum.NOT_OPEN) as "task-suggestion/not-open",
  OpenLimit: codeText(CodeEnum.OPEN_LIMIT) as "task-suggestion/open-limit",
  WorkspaceMissing: codeText(CodeEnum.WORKSPACE_MISSING) as "task-suggestion/workspace-missing",
});

/** The ErrorInfo domain of SuggestionError failures. */
export const SUGGESTION_ERROR_DOMAIN = "task-suggestion";

/** The lowercase word of a state, as the failures' messages use it (docs/contract.md). */
export function stateWord(state: SuggestionState): string {
  switch (state) {
    case SuggestionState.OPEN:
      return "open";
    case SuggestionState.STARTED:
      return "started";
    case SuggestionState.DRAFTED:
      return "drafted";
    case SuggestionState.DISMISSED:
      return "dismissed";
    default:
      return "unspecified";
  }
}

/** A failure of the list, settle and start RPCs as its payload describes it. */
export type SuggestionFailure =
  | { code: typeof SuggestionErrorCode.NotFound; suggestionId: string }
  | { code: typeof SuggestionErrorCode.NotOpen; suggestionId: string; state: SuggestionState }
  | { code: typeof SuggestionErrorCode.OpenLimit; limit: number }
  | {
      code: typeof SuggestionErrorCode.WorkspaceMissing;
      sessionId: string;
      reason: WorkspaceMissingReason;
    };

/** What the caller is told of one failure. */
export interface FailureAnswer {
  /** The reference's message. */
  readonly message: string;
  /** The contract's gRPC code. */
  readonly code: Code;
  /** SuggestionError's typed payload. */
  readonly payload: MessageInitShape<typeof SuggestionErrorSchema>["payload"];
  /** The payload's values as strings, for ErrorInfo. */
  readonly metadata: Record<string, string>;
}

/** The reference's table "Failures carry their payloads", one row per code. */
export function describeFailure(f: SuggestionFailure): FailureAnswer {
  switch (f.code) {
    case SuggestionErrorCode.NotFound:
      return {
        message: `no suggestion "${f.suggestionId}"`,
        code: Code.NotFound,
        payload: { case: "notFound", value: { suggestionId: f.suggestionId } },
        metadata: { suggestionId: f.suggestionId },
      };
    case SuggestionErrorCode.NotOpen:
      return {
        message: `suggestion "${f.suggestionId}" is ${stateWord(f.state)}`,
        code: Code.FailedPrecondition,
        payload: { case: "notOpen", value: { suggestionId: f.suggestionId, state: f.state } },
        metadata: { suggestionId: f.suggestionId, state: stateWord(f.state) },
      };
    case SuggestionErrorCode.OpenLimit:
      return {
        message: `${f.limit} suggestions are already open`,
        code: Code.ResourceExhausted,
        payload: { case: "openLimit", value: { limit: f.limit } },
        metadata: { limit: String(f.limit) },
      };
    case SuggestionErrorCode.WorkspaceMissing:
      return {
        message:
          f.reason === WorkspaceMissingReason.SCHEDULED_TASK_FOLDER
            ? `session "${f.sessionId}" runs in a scheduled task's folder`
            : `session "${f.sessionId}" belongs to no workspace`,
        code: Code.FailedPrecondition,
        payload: { case: "workspaceMissing", value: { sessionId: f.sessionId, reason: f.reason } },
        metadata: { sessionId: f.sessionId, reason: WorkspaceMissingReason[f.reason] },
      };
  }
}
