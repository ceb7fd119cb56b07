import { getOption, hasOption } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  type SuggestionError_NotFound,
  type SuggestionError_NotOpen,
  type SuggestionError_OpenLimit,
  type SuggestionError_WorkspaceMissing,
  SuggestionErrorCode,
  SuggestionErrorCodeSchema,
  SuggestionErrorSchema,
  type SuggestTaskRefusal,
  SuggestTaskRefusalSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { error_code } from "../../gen/oda/suggest/v1/tool_options_pb.js";

/**
 * Each failure code's text (`"task-suggestion/not-open"`), read from the `(error_code)` option
 * of its `SuggestionErrorCode` value in the proto, so that the text is written once, there.
 */
const CODE_TEXT: ReadonlyMap<SuggestionErrorCode, string> = /*@__PURE__*/ new Map(
  SuggestionErrorCodeSchema.values
    .filter((value) => hasOption(value, error_code))
    .map((value) => [value.number as SuggestionErrorCode, getOption(value, error_code)]),
);

/**
 * The reference's text of a failure code, as `SuggestionError.code` carries it on the wire:
 * `errorCodeText(SuggestionErrorCode.NOT_OPEN)` is `"task-suggestion/not-open"`. The text
 * comes from the proto's `(error_code)` option; a value that declares none (UNSPECIFIED, or a
 * value newer than this SDK) answers `""`.
 */
export function errorCodeText(code: SuggestionErrorCode): string {
  return CODE_TEXT.get(code) ?? "";
}

/**
 * The `SuggestionErrorCode` whose `(error_code)` text is `text`; UNSPECIFIED for a text the
 * proto does not declare, so a code newer than this SDK reads as unknown, not as another.
 */
export function errorCodeOf(text: string): SuggestionErrorCode {
  for (const [code, value] of CODE_TEXT) if (value === text) return code;
  return SuggestionErrorCode.UNSPECIFIED;
}

/**
 * The base of the SDK's typed errors: a `ConnectError` (code, raw message, metadata and the
 * raw details are the server's, so `findDetails` still works) whose details the SDK has read
 * into a typed `payload`.
 *
 * `name` stays `"ConnectError"` on purpose: connect-es recognises a `ConnectError` that is
 * not its own class by that name, so `err instanceof ConnectError` stays true and connect's
 * own error handling passes these errors through unchanged rather than wrapping them.
 */
export abstract class SuggestTaskServiceError<P extends object = object> extends ConnectError {
  /** The `google.rpc.ErrorInfo` the server attached, for clients that log or branch on it. */
  readonly errorInfo: ErrorInfo | undefined;

  /**
   * Wraps `source`, whose details carry `payload` (the typed detail read from them);
   * `toSuggestionError` builds these.
   */
  constructor(
    source: ConnectError,
    readonly payload: P,
  ) {
    super(source.rawMessage, source.code, source.metadata, undefined, source.cause);
    this.details = source.details;
    this.errorInfo = source.findDetails(ErrorInfoSchema)[0];
    if (source.stack !== undefined) this.stack = source.stack;
  }

  /**
   * `ConnectError`'s own `Symbol.hasInstance` ignores which class it is asked about, so that
   * any `ConnectError` would pass `instanceof SuggestionNotFoundError`; this restores the
   * ordinary prototype check for the SDK's classes.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === "object" &&
      value !== null &&
      // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` asks about.
      Object.prototype.isPrototypeOf.call(this.prototype, value)
    );
  }
}

/** The base of the four failures that carry a `SuggestionError` detail. */
export abstract class TaskSuggestionError<
  P extends object = object,
> extends SuggestTaskServiceError<P> {
  /** The failure's code: `SuggestionErrorCode.NOT_OPEN`, ... */
  abstract readonly suggestionErrorCode: SuggestionErrorCode;

  /** The reference's text of the code, e.g. `"task-suggestion/not-open"` (`errorCodeText`). */
  get errorCode(): string {
    return errorCodeText(this.suggestionErrorCode);
  }
}

/** `task-suggestion/not-found` (NOT_FOUND): no suggestion with the requested id. */
export class SuggestionNotFoundError extends TaskSuggestionError<SuggestionError_NotFound> {
  override readonly suggestionErrorCode = SuggestionErrorCode.NOT_FOUND;
}

/**
 * `task-suggestion/not-open` (FAILED_PRECONDITION): the suggestion's standing does not allow
 * the call; the payload names the state it already has (started, drafted or dismissed).
 */
export class SuggestionNotOpenError extends TaskSuggestionError<SuggestionError_NotOpen> {
  override readonly suggestionErrorCode = SuggestionErrorCode.NOT_OPEN;
}

/** `task-suggestion/open-limit` (RESOURCE_EXHAUSTED): a restore would pass the open ceiling. */
export class SuggestionOpenLimitError extends TaskSuggestionError<SuggestionError_OpenLimit> {
  override readonly suggestionErrorCode = SuggestionErrorCode.OPEN_LIMIT;
}

/**
 * `task-suggestion/workspace-missing` (FAILED_PRECONDITION): the offering session cannot
 * start a chat, because it belongs to no workspace or runs in a scheduled task's folder.
 */
export class WorkspaceMissingError extends TaskSuggestionError<SuggestionError_WorkspaceMissing> {
  override readonly suggestionErrorCode = SuggestionErrorCode.WORKSPACE_MISSING;
}

/**
 * A refused suggest_task call. `rawMessage` is the contract's exact text, which is what the
 * model should see; `payload` says why (`reason`) and, for field refusals (`FIELD_EMPTY`,
 * also for a field that shows nothing; `FIELD_TOO_LONG`; `FIELD_CONTROL_CHARACTER`), which
 * field, its limit and the code points counted.
 */
export class SuggestTaskRefusalError extends SuggestTaskServiceError<SuggestTaskRefusal> {}

/** True for a `task-suggestion/not-found` failure converted by the SDK. */
export function isSuggestionNotFoundError(err: unknown): err is SuggestionNotFoundError {
  return err instanceof SuggestionNotFoundError;
}

/** True for a `task-suggestion/not-open` failure converted by the SDK. */
export function isSuggestionNotOpenError(err: unknown): err is SuggestionNotOpenError {
  return err instanceof SuggestionNotOpenError;
}

/** True for a `task-suggestion/open-limit` failure converted by the SDK. */
export function isSuggestionOpenLimitError(err: unknown): err is SuggestionOpenLimitError {
  return err instanceof SuggestionOpenLimitError;
}

/** True for a `task-suggestion/workspace-missing` failure converted by the SDK. */
export function isWorkspaceMissingError(err: unknown): err is WorkspaceMissingError {
  return err instanceof WorkspaceMissingError;
}

/** True for a refused suggest_task call converted by the SDK. */
export function isSuggestTaskRefusalError(err: unknown): err is SuggestTaskRefusalError {
  return err instanceof SuggestTaskRefusalError;
}

/** True for any of the four `task-suggestion/*` failures converted by the SDK. */
export function isTaskSuggestionError(err: unknown): err is TaskSuggestionError {
  return err instanceof TaskSuggestionError;
}

/**
 * Converts anything thrown by a call into the SDK's typed error when its details say what it
 * is: a `SuggestionError` whose code and payload agree becomes one of the four
 * `task-suggestion/*` classes, a `SuggestTaskRefusal` becomes a `SuggestTaskRefusalError`.
 * Any other error is returned as a plain `ConnectError` (`ConnectError.from`), so one
 * `catch` can handle both. Clients made by the SDK already throw the typed classes; this is
 * for errors from clients made elsewhere.
 */
export function toSuggestionError(err: unknown): ConnectError {
  const error = ConnectError.from(err);
  if (error instanceof SuggestTaskServiceError) return error;
  const [detail] = error.findDetails(SuggestionErrorSchema);
  if (detail !== undefined) {
    const { payload } = detail;
    switch (payload.case) {
      case "notFound":
        if (detail.code === errorCodeText(SuggestionErrorCode.NOT_FOUND)) {
          return new SuggestionNotFoundError(error, payload.value);
        }
        break;
      case "notOpen":
        if (detail.code === errorCodeText(SuggestionErrorCode.NOT_OPEN)) {
          return new SuggestionNotOpenError(error, payload.value);
        }
        break;
      case "openLimit":
        if (detail.code === errorCodeText(SuggestionErrorCode.OPEN_LIMIT)) {
          return new SuggestionOpenLimitError(error, payload.value);
        }
        break;
      case "workspaceMissing":
        if (detail.code === errorCodeText(SuggestionErrorCode.WORKSPACE_MISSING)) {
          return new WorkspaceMissingError(error, payload.value);
        }
        break;
      case undefined:
        break;
    }
    return error;
  }
  const [refusal] = error.findDetails(SuggestTaskRefusalSchema);
  return refusal === undefined ? error : new SuggestTaskRefusalError(error, refusal);
}

/**
 * A client interceptor that rethrows every error of a call through `toSuggestionError`,
 * including errors that end a server stream (WatchSuggestions) while it is read. The SDK's
 * clients install it first, so that it sees errors after every other interceptor.
 */
export const typedErrorsInterceptor: Interceptor = (next) => async (req) => {
  let res: Awaited<ReturnType<typeof next>>;
  try {
    res = await next(req);
  } catch (err) {
    throw toSuggestionError(err);
  }
  if (!res.stream) return res;
  return { ...res, message: rethrowTyped(res.message) };
};

async function* rethrowTyped<T>(messages: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* messages;
  } catch (err) {
    throw toSuggestionError(err);
  }
}
