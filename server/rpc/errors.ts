import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  RefusalReason,
  type Suggestion,
  SuggestionErrorSchema,
  SuggestTaskRefusalSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  describeFailure,
  SUGGESTION_ERROR_DOMAIN,
  SuggestionErrorCode,
  type SuggestionFailure,
} from "../domain/failures.js";
import {
  describeRefusal,
  REFUSAL_DOMAIN,
  type Refusal,
  type RefusingTool,
} from "../domain/refusals.js";

/**
 * The one module that turns failures into `ConnectError`s with typed details, as
 * connect-node's node-error.ts does for its own: the domain says what a refusal or a
 * failure is (domain/refusals.ts, domain/failures.ts); this builds the wire error.
 */

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

/** The suggestion; `task-suggestion/not-found` when the log holds no such offer. */
export function foundSuggestion(
  suggestion: Suggestion | undefined,
  suggestionId: string,
): Suggestion {
  if (suggestion === undefined) {
    throw suggestionError({ code: SuggestionErrorCode.NotFound, suggestionId });
  }
  return suggestion;
}

/** `fn`'s result; a failure of the suggestion store (Redis) is UNAVAILABLE (`dependencyError`). */
export async function storeCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw dependencyError(err, "the suggestion store");
  }
}

/** `fn`'s result; a chat host that is down or times out is UNAVAILABLE (`dependencyError`). */
export async function hostCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw dependencyError(err, "the chat host");
  }
}
