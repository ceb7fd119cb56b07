import type { DescMethod } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";

/** A request message as an interceptor sees it: any generated message. */
type RequestMessage = { readonly $typeName: string };

/** Reads a string field of a request, or of one of its message fields, by name. */
function stringAt(message: RequestMessage, ...path: string[]): string {
  let value: unknown = message;
  for (const key of path) {
    if (typeof value !== "object" || value === null) return "";
    value = (value as Record<string, unknown>)[key];
  }
  return typeof value === "string" ? value : "";
}

/**
 * The calls whose repeat is harmless although the proto does not mark them idempotent, by
 * `<service type name>/<method name>`, each with what its request must carry. The contract
 * (docs/contract.md, "Retry safety") states the same list per RPC.
 */
const SAFE: ReadonlyMap<string, (message: RequestMessage) => boolean> = new Map([
  // A retry with the same (session_id, tool_call_id) answers the first result; without a
  // tool_call_id a repeat would record a second offer (or withdraw a second one).
  [
    "oda.suggest.v1.SuggestionService/SuggestTask",
    (m) => stringAt(m, "context", "toolCallId") !== "",
  ],
  [
    "oda.suggest.v1.SuggestionService/WithdrawSuggestion",
    (m) => stringAt(m, "context", "toolCallId") !== "",
  ],
  // Single-flight: a repeat answers the same chat.
  ["oda.suggest.v1.SuggestionService/StartSuggestion", () => true],
  // A repeat of an outcome already taken answers the suggestion as it is.
  ["oda.suggest.v1.SuggestionService/DraftSuggestion", () => true],
  ["oda.suggest.v1.SuggestionService/DismissSuggestion", () => true],
  ["oda.suggest.v1.SuggestionService/RestoreSuggestion", () => true],
  // Create or replace.
  ["oda.suggest.v1.LocalHostService/PutSession", () => true],
  ["oda.suggest.v1.LocalHostService/GetChat", () => true],
  ["oda.suggest.v1.ChatHostService/GetSession", () => true],
  // The same idempotency key answers the same chat, posts once.
  ["oda.suggest.v1.ChatHostService/CreateChat", (m) => stringAt(m, "idempotencyKey") !== ""],
  ["oda.suggest.v1.ChatHostService/PostMessage", (m) => stringAt(m, "idempotencyKey") !== ""],
]);

/**
 * True when sending `message` to `method` a second time is harmless, so the SDK may retry it
 * after a failure that leaves unknown whether the first one was applied: a method the proto
 * marks `NO_SIDE_EFFECTS` or `IDEMPOTENT` (the reads, `DeleteSuggestions`), `SuggestTask` and
 * `WithdrawSuggestion` only with a `tool_call_id`, `StartSuggestion`, Draft, Dismiss,
 * Restore, `PutSession`, and a host's `CreateChat` and `PostMessage` with an idempotency key.
 * Everything else (a `SuggestTask` without `tool_call_id`, `CreateGoal`) is never sent twice.
 */
export function isRetrySafe(method: DescMethod, message: RequestMessage): boolean {
  if (
    method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS ||
    method.idempotency === MethodOptions_IdempotencyLevel.IDEMPOTENT
  ) {
    return true;
  }
  const rule = SAFE.get(`${method.parent.typeName}/${method.name}`);
  return rule?.(message) === true;
}
