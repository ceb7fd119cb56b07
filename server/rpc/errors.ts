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
import { isRedisFailure, storeRefusal } from "../redis/store-condition.js";

/**
 * The one module that turns failures into `ConnectError`s with typed details, as
 * connect-node's node-error module does for its own: the domain says what a refusal or a
 * failure is (domain/refusals.ts, domain/failures.ts); this builds the wire error.
 */

/**
 * The error a refused tool call answers with: the contract's exact text as the
 * message (the model sees it), its gRPC code, a `SuggestTaskRefusal` and an
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
 * The error a failed list, settle or start call answers with: the contract's message,
 * its gRPC code, a `SuggestionError` with its typed payload and an `ErrorInfo`
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
 * original as `cause` for logs and never in the message. A failure names what failed:
 * Redis failing under a host call (the embedded host's chats are in Redis) is the
 * suggestion store's, as is a store failure already mapped.
 */
export function dependencyError(err: unknown, what: string): ConnectError {
  if (err instanceof ConnectError && !DEPENDENCY_DOWN.has(err.code)) return err;
  const refused = refusedWrite(err);
  if (refused !== undefined) return refused;
  if (err instanceof ConnectError && err.rawMessage === STORE_UNAVAILABLE) return err;
  const failed = isRedisFailure(err) ? STORE_UNAVAILABLE : `${what} is unavailable`;
  return new ConnectError(failed, Code.Unavailable, undefined, undefined, err);
}

/** The message of a call that failed for want of Redis. */
const STORE_UNAVAILABLE = "the suggestion store is unavailable";

/** The message of an out-of-memory refusal, whichever part of the service wrote. */
export const OUT_OF_MEMORY = "the suggestion store is out of memory";

/**
 * A write that Redis refused while it answered (redis/store-condition.ts): out of memory
 * is RESOURCE_EXHAUSTED (the store is full, not gone); a disk that refuses the AOF is
 * UNAVAILABLE naming Redis's cause; a write fewer replicas confirmed than
 * `REDIS_WAIT_REPLICAS` is UNAVAILABLE (a retry is harmless). Such a ConnectError passes
 * through a second mapping unchanged. Undefined for anything else.
 */
function refusedWrite(err: unknown): ConnectError | undefined {
  // Mapped already (a store call inside a host call): kept as it is.
  if (err instanceof ConnectError) return storeRefusal(err.cause) === undefined ? undefined : err;
  const refusal = storeRefusal(err);
  if (refusal === undefined) return undefined;
  const failure = err;
  switch (refusal.kind) {
    case "out-of-memory":
      return new ConnectError(OUT_OF_MEMORY, Code.ResourceExhausted, undefined, undefined, failure);
    case "disk":
      return new ConnectError(
        `the suggestion store cannot write to its disk (${refusal.cause})`,
        Code.Unavailable,
        undefined,
        undefined,
        failure,
      );
    case "unconfirmed":
      return new ConnectError(
        `the write was not confirmed by ${refusal.replicas} replicas`,
        Code.Unavailable,
        undefined,
        undefined,
        failure,
      );
  }
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
