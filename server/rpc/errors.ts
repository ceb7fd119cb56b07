import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  RefusalReason,
  SuggestionErrorSchema,
  SuggestionState,
  SuggestTaskRefusalSchema,
  WorkspaceMissingReason,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";

/** The reference's failure codes of the list, settle and start RPCs. */
export const SuggestionErrorCode = {
  NotFound: "task-suggestion/not-found",
  NotOpen: "task-suggestion/not-open",
  OpenLimit: "task-suggestion/open-limit",
  WorkspaceMissing: "task-suggestion/workspace-missing",
} as const;

/** The ErrorInfo domain of SuggestionError failures. */
export const SUGGESTION_ERROR_DOMAIN = "task-suggestion";
/** The ErrorInfo domain of the tool's refusals. */
export const REFUSAL_DOMAIN = "suggest_task";

/**
 * The tools whose refusals carry a `SuggestTaskRefusal`; each is also the ErrorInfo
 * domain and the prefix of its refusal texts (design.md).
 */
export type RefusingTool = typeof REFUSAL_DOMAIN | "withdraw_suggestion";

/** The reference's success line for a recorded offer. */
export function successLine(title: string): string {
  return `Suggested "${title}". The user decides whether to start it; do not start it yourself.`;
}

/** The lowercase word of a state, as the reference's messages use it. */
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

/** A refusal of suggest_task as its detail describes it. */
export type Refusal =
  | {
      reason:
        | RefusalReason.NOT_TOP_LEVEL
        | RefusalReason.NO_SESSION
        | RefusalReason.SCHEDULED_TASK_FOLDER
        | RefusalReason.NO_OPEN_TURN
        | RefusalReason.LIFETIME_LIMIT
        | RefusalReason.OPEN_LIMIT
        | RefusalReason.TURN_LIMIT;
    }
  | { reason: RefusalReason.FIELD_EMPTY; field: string; limit: number }
  | { reason: RefusalReason.FIELD_TOO_LONG; field: string; limit: number; got: number }
  /** withdraw_suggestion only: no open offer of the chat has the (trimmed) title. */
  | { reason: RefusalReason.NO_OPEN_OFFER; title: string };

/** The quota limits of the tool, as the reference states them. */
export const LIFETIME_LIMIT = 10;
export const OPEN_LIMIT = 3;
export const TURN_LIMIT = 1;

/**
 * The reference's text, the gRPC code and the detail values of each refusal. The texts
 * both tools share differ only by the tool's name; the helper refusal has its own text
 * per tool.
 */
function describeRefusal(
  r: Refusal,
  tool: RefusingTool,
): { message: string; code: Code; limit: number } {
  switch (r.reason) {
    case RefusalReason.NOT_TOP_LEVEL:
      return {
        message:
          tool === "withdraw_suggestion"
            ? "withdraw_suggestion is only for the top-level agent."
            : "suggest_task is only for the top-level agent; report the follow-up in your result instead.",
        code: Code.PermissionDenied,
        limit: 0,
      };
    case RefusalReason.NO_SESSION:
      return {
        message: `${tool} requires an owning agent session`,
        code: Code.FailedPrecondition,
        limit: 0,
      };
    case RefusalReason.SCHEDULED_TASK_FOLDER:
      return {
        message:
          "suggest_task: this chat runs in a scheduled task folder, where no new chat can start; offer no suggestions here",
        code: Code.FailedPrecondition,
        limit: 0,
      };
    case RefusalReason.NO_OPEN_TURN:
      return {
        message: `${tool}: requires an open model turn`,
        code: Code.FailedPrecondition,
        limit: 0,
      };
    case RefusalReason.LIFETIME_LIMIT:
      return {
        message: `suggest_task: this chat already offered ${LIFETIME_LIMIT} suggestions; offer no more`,
        code: Code.ResourceExhausted,
        limit: LIFETIME_LIMIT,
      };
    case RefusalReason.OPEN_LIMIT:
      return {
        message: `suggest_task: ${OPEN_LIMIT} suggestions already wait for the user; offer no more until one is started or dismissed`,
        code: Code.ResourceExhausted,
        limit: OPEN_LIMIT,
      };
    case RefusalReason.TURN_LIMIT:
      return {
        message: "suggest_task: one suggestion per turn; this turn already offered one",
        code: Code.ResourceExhausted,
        limit: TURN_LIMIT,
      };
    case RefusalReason.FIELD_EMPTY:
      return {
        message: `${tool}: ${r.field} must not be empty`,
        code: Code.InvalidArgument,
        limit: r.limit,
      };
    case RefusalReason.FIELD_TOO_LONG:
      return {
        message: `${tool}: ${r.field} must be at most ${r.limit} characters (got ${r.got})`,
        code: Code.InvalidArgument,
        limit: r.limit,
      };
    case RefusalReason.NO_OPEN_OFFER:
      return {
        message: `${tool}: no open suggestion is titled "${r.title}"`,
        code: Code.NotFound,
        limit: 0,
      };
  }
}

/**
 * The error a refused tool call answers with: the reference's exact text as the
 * message (the model sees it), the design's gRPC code, a `SuggestTaskRefusal` and an
 * `ErrorInfo` (domain the tool's name, `suggest_task` or `withdraw_suggestion`, reason
 * the enum's name without its prefix).
 */
export function refusalError(r: Refusal, tool: RefusingTool = REFUSAL_DOMAIN): ConnectError {
  const { message, code, limit } = describeRefusal(r, tool);
  const field = "field" in r ? r.field : "";
  const got = "got" in r ? r.got : 0;
  const metadata: Record<string, string> = {};
  if (field !== "") metadata.field = field;
  if (limit !== 0) metadata.limit = String(limit);
  if (got !== 0) metadata.got = String(got);
  return new ConnectError(message, code, undefined, [
    { desc: SuggestTaskRefusalSchema, value: { reason: r.reason, field, limit, got } },
    {
      desc: ErrorInfoSchema,
      value: { domain: tool, reason: RefusalReason[r.reason], metadata },
    },
  ]);
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

/**
 * The error a failed list, settle or start call answers with: the reference's message,
 * the design's gRPC code, a `SuggestionError` with its typed payload and an `ErrorInfo`
 * (domain `task-suggestion`, reason the code's tail in upper snake case, metadata the
 * payload's values as strings).
 */
export function suggestionError(f: SuggestionFailure): ConnectError {
  const { message, code, payload, metadata } = describeFailure(f);
  return new ConnectError(message, code, undefined, [
    { desc: SuggestionErrorSchema, value: { code: f.code, payload } },
    {
      desc: ErrorInfoSchema,
      value: {
        domain: SUGGESTION_ERROR_DOMAIN,
        reason: f.code
          .slice(f.code.indexOf("/") + 1)
          .replaceAll("-", "_")
          .toUpperCase(),
        metadata,
      },
    },
  ]);
}

/** The message, gRPC code, typed payload and ErrorInfo metadata of each failure. */
function describeFailure(f: SuggestionFailure): {
  message: string;
  code: Code;
  payload: MessageInitShape<typeof SuggestionErrorSchema>["payload"];
  metadata: Record<string, string>;
} {
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

/**
 * The codes with which a dependency's client reports that the dependency is down, timed
 * out or broken, rather than answering the request: reported as UNAVAILABLE.
 */
const DEPENDENCY_DOWN: ReadonlySet<Code> = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.Unknown,
  Code.Internal,
  Code.DataLoss,
  Code.Unimplemented,
]);

/**
 * Maps a failure of Redis or of the chat host to a ConnectError, in one place: a
 * ConnectError that is the dependency's answer (NOT_FOUND, PERMISSION_DENIED, ...)
 * passes through; anything else (a connection refused or closed, a call or command timed
 * out, ioredis's retries exhausted, a remote host's INTERNAL) is UNAVAILABLE, with the
 * original as `cause` for logs and never in the message.
 */
export function dependencyError(err: unknown, what: string): ConnectError {
  if (err instanceof ConnectError && !DEPENDENCY_DOWN.has(err.code)) return err;
  return new ConnectError(`${what} is unavailable`, Code.Unavailable, undefined, undefined, err);
}
