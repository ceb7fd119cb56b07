import type {
  GetSuggestionRequest,
  GetSuggestionResponse,
  ListSuggestionsRequest,
  ListSuggestionsResponse,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestionLists } from "../domain/fold.js";
import { requireId } from "../domain/ids.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { foundSuggestion, storeCall } from "./errors.js";
import { getResponseOf, listResponseOf } from "./shared-responses.js";

/** What the list and get handlers need. */
export interface ListSuggestionsDeps {
  readonly store: SuggestionStore;
}

/**
 * A session's lists: the fold of its stream, read through the projection after catching
 * it up (O(offers), see `SuggestionStore.snapshot`); a Redis failure is UNAVAILABLE. An
 * unknown session has empty lists: the log of a chat that never offered anything is
 * simply empty.
 */
export async function readLists(
  store: SuggestionStore,
  sessionId: string,
): Promise<SuggestionLists> {
  return storeCall(() => store.lists(sessionId));
}

/**
 * ListSuggestions: open offers newest first, settled ones in the order their offers
 * appeared (so a restored offer returns to its place by offer time), each with its
 * state, times, turn and, when started, its chat. An unchanged chat answers the same
 * response object as the last call (rpc/shared-responses.ts). Pinned by
 * test/rpc/list.test.ts.
 */
export async function listSuggestions(
  deps: ListSuggestionsDeps,
  request: ListSuggestionsRequest,
): Promise<ListSuggestionsResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  return listResponseOf(await readLists(deps.store, sessionId));
}

/**
 * GetSuggestion: one suggestion as the fold gives it, reading only its records
 * (`SuggestionStore.suggestion`); `task-suggestion/not-found` when the session's log
 * holds no offer with that id.
 */
export async function getSuggestion(
  deps: ListSuggestionsDeps,
  request: GetSuggestionRequest,
): Promise<GetSuggestionResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  const suggestionId = requireId("suggestion_id", request.suggestionId);
  const suggestion = await storeCall(() => deps.store.suggestion(sessionId, suggestionId));
  return getResponseOf(foundSuggestion(suggestion, suggestionId));
}
