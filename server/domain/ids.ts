import { Code, ConnectError } from "@connectrpc/connect";

/** Session, chat and suggestion ids: 1 to 128 characters of `[A-Za-z0-9._:-]`. */
const ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Turn and tool-call ids are the runtime's; they become hash fields, never keys. */
const RUNTIME_ID_PATTERN = /^[A-Za-z0-9._:-]{1,256}$/;

/** True when `id` may name a session, chat or suggestion. */
export function isValidId(id: string): boolean {
  return ID_PATTERN.test(id);
}

/**
 * Checks an id that the request must carry; INVALID_ARGUMENT when it is missing or
 * malformed, naming the field, so that no caller's text reaches Redis as a key.
 */
export function requireId(field: string, value: string): string {
  if (value === "") {
    throw new ConnectError(`${field} is required`, Code.InvalidArgument);
  }
  return checkOptionalId(field, value);
}

/**
 * Checks an id that may be absent (empty), as SuggestTask's session id, whose absence
 * is a refusal (row 2 of docs/contract.md's table) rather than a malformed request.
 */
export function checkOptionalId(field: string, value: string): string {
  if (value !== "" && !ID_PATTERN.test(value)) {
    throw new ConnectError(
      `${field} must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'`,
      Code.InvalidArgument,
    );
  }
  return value;
}

/** Checks an optional runtime id (turn, tool call): empty is allowed, malformed is not. */
export function checkRuntimeId(field: string, value: string): string {
  if (value !== "" && !RUNTIME_ID_PATTERN.test(value)) {
    throw new ConnectError(
      `${field} must be at most 256 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'`,
      Code.InvalidArgument,
    );
  }
  return value;
}

/** Idempotency keys: 1 to 256 printable ASCII characters without spaces. */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7E]{1,256}$/;

/**
 * Checks a host call's idempotency key; INVALID_ARGUMENT when missing or malformed. The
 * embedded host never uses a key as a Redis key: it hashes it into the chat or message
 * id, so any printable key is safe.
 */
export function requireIdempotencyKey(field: string, value: string): string {
  if (!IDEMPOTENCY_KEY_PATTERN.test(value)) {
    throw new ConnectError(
      value === ""
        ? `${field} is required`
        : `${field} must be 1 to 256 printable ASCII characters without spaces`,
      Code.InvalidArgument,
    );
  }
  return value;
}
