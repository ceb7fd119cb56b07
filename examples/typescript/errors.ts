import { randomUUID } from "node:crypto";
import {
  AgentRole,
  createLocalHostClient,
  isSuggestionNotFoundError,
  isSuggestionNotOpenError,
  isSuggestionOpenLimitError,
  isSuggestTaskRefusalError,
  isWorkspaceMissingError,
  RefusalReason,
  SuggestionState,
  WorkspaceMissingReason,
} from "@oda/suggest-task/node";
import { baseUrl, client } from "./client.js";

/** What to do about a failed call: compare the payloads' enums by name, never by number. */
export function explain(err: unknown): string {
  if (isSuggestionNotFoundError(err)) {
    return `not found: ${err.payload.suggestionId}`; // task-suggestion/not-found, NOT_FOUND
  }
  if (isSuggestionNotOpenError(err)) {
    // task-suggestion/not-open, FAILED_PRECONDITION; the state is STARTED, DRAFTED or DISMISSED
    return `not open: ${SuggestionState[err.payload.state]}`;
  }
  if (isSuggestionOpenLimitError(err)) {
    return `${err.payload.limit} are open already`; // task-suggestion/open-limit (a Restore)
  }
  if (isWorkspaceMissingError(err)) {
    // task-suggestion/workspace-missing, FAILED_PRECONDITION (a Start)
    return err.payload.reason === WorkspaceMissingReason.NO_WORKSPACE
      ? `chat ${err.payload.sessionId} is in no workspace`
      : `chat ${err.payload.sessionId} is in a scheduled task's folder`;
  }
  if (isSuggestTaskRefusalError(err)) {
    // A refused suggestTask: err.rawMessage is the contract's text, for the model.
    if (err.payload.reason === RefusalReason.TURN_LIMIT) return `refused: ${err.rawMessage}`;
    return `refused (${RefusalReason[err.payload.reason]}): ${err.rawMessage}`;
  }
  throw err; // a plain ConnectError (UNAVAILABLE, DEADLINE_EXCEEDED, ...)
}

const sessionId = `chat-${randomUUID()}`;
await createLocalHostClient({ baseUrl }).putSession({ session: { sessionId } }); // no workspace
const context = { sessionId, turnId: "turn-1", role: AgentRole.TOP_LEVEL };
const args = { title: "Add retries", tldr: "Uploads fail on flaky links", brief: "Retry uploads" };
const { suggestion } = await client.suggestTask({ context, args });
const suggestionId = suggestion?.id ?? "";

const calls = [
  () => client.startSuggestion({ sessionId, suggestionId }), // the chat has no workspace
  () => client.getSuggestion({ sessionId, suggestionId: "no-such-id" }),
  () => client.suggestTask({ context, args }), // a second offer in the same turn
];
for (const call of calls) {
  try {
    await call();
  } catch (err) {
    console.log(explain(err));
  }
}
