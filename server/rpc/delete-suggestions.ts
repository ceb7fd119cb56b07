import { create } from "@bufbuild/protobuf";
import {
  type DeleteSuggestionsRequest,
  type DeleteSuggestionsResponse,
  DeleteSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { requireId } from "../domain/ids.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { storeCall } from "./errors.js";

/** What the DeleteSuggestions handler needs. */
export interface DeleteSuggestionsDeps {
  readonly store: SuggestionStore;
}

/** The one answer of DeleteSuggestions, erased or not (the call is idempotent). */
const ERASED: DeleteSuggestionsResponse = create(DeleteSuggestionsResponseSchema, {});

/**
 * The workspaces a chat's suggestions belong to, as its offers recorded them: what a
 * caller's grants must cover before the chat may be erased. One read of the chat's lists.
 */
export async function chatWorkspaces(store: SuggestionStore, sessionId: string): Promise<string[]> {
  const { byId } = await store.lists(sessionId);
  return [...new Set([...byId.values()].map((s) => s.workspaceId).filter((ws) => ws !== ""))];
}

/**
 * DeleteSuggestions: erases the chat's suggestions (its log, projection, start locks,
 * inbox entries and the embedded host's records of the session) so that no key or value
 * in Redis holds its id or its text (`SuggestionStore.erase`, store/chat-erasure.ts).
 * The chat then reads as one that never offered anything; its watchers get the empty
 * lists and its workspaces' inboxes no longer list it. Repeated, or for a chat that
 * never offered anything, it answers the same. Pinned by test/rpc/delete-suggestions.test.ts.
 */
export async function deleteSuggestions(
  deps: DeleteSuggestionsDeps,
  request: DeleteSuggestionsRequest,
  /**
   * Checks that the caller may erase a chat of these workspaces (its offers'), throwing
   * when not: where a per-workspace grant applies. None: the role's grant is enough.
   */
  authorize?: (workspaces: readonly string[]) => void,
): Promise<DeleteSuggestionsResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  if (authorize !== undefined) {
    authorize(await storeCall(() => chatWorkspaces(deps.store, sessionId)));
  }
  await storeCall(() => deps.store.erase(sessionId));
  return ERASED;
}
