import { create } from "@bufbuild/protobuf";
import {
  type DeleteSuggestionsRequest,
  type DeleteSuggestionsResponse,
  DeleteSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { requireId } from "../domain/ids.js";
import type { ChatHost } from "../host/chat-host.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { storeCall } from "./errors.js";
import { findSession } from "./suggest-task.js";

/** What the DeleteSuggestions handler needs. */
export interface DeleteSuggestionsDeps {
  readonly store: SuggestionStore;
  /** The chat host, asked for the session's workspace when a caller's grants are checked. */
  readonly host?: ChatHost;
}

/** The one answer of DeleteSuggestions, erased or not (the call is idempotent). */
const ERASED: DeleteSuggestionsResponse = create(DeleteSuggestionsResponseSchema, {});

/**
 * The workspaces a chat belongs to: those its offers recorded, and its session's on the
 * host when `deps.host` is given (the embedded host's records of the session are erased
 * too). The empty id stands for a chat in no workspace. What a caller's grants must all
 * cover before the chat may be erased.
 */
export async function chatWorkspaces(
  deps: DeleteSuggestionsDeps,
  sessionId: string,
): Promise<string[]> {
  const { byId } = await storeCall(() => deps.store.lists(sessionId));
  const found = new Set([...byId.values()].map((s) => s.workspaceId));
  const session = deps.host === undefined ? undefined : await findSession(deps.host, sessionId);
  if (session !== undefined) found.add(session.workspaceId);
  return [...found];
}

/**
 * DeleteSuggestions: erases the chat's suggestions (its log, projection, start locks,
 * inbox entries and the embedded host's records of the session) so that no key or value
 * in Redis holds its id or its text (`SuggestionStore.erase`, store/chat-erasure.ts).
 * The chat then reads as one that never offered anything; its watchers get the empty
 * lists and its workspaces' inboxes no longer list it. Repeated, or for a chat that
 * never offered anything, it answers the same. With `mayErase` (a credential limited to
 * some workspaces), a chat of a workspace it does not open is left as it is and answered
 * exactly as an absent one: the same empty answer. Pinned by
 * test/rpc/delete-suggestions.test.ts and test/pipeline/jwt-tenants.test.ts.
 */
export async function deleteSuggestions(
  deps: DeleteSuggestionsDeps,
  request: DeleteSuggestionsRequest,
  /**
   * Whether the caller may erase a chat of these workspaces (`chatWorkspaces`), where a
   * per-workspace grant applies; false: nothing is erased. None: the role's grant is enough.
   */
  mayErase?: (workspaces: readonly string[]) => boolean,
): Promise<DeleteSuggestionsResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  if (mayErase !== undefined && !mayErase(await chatWorkspaces(deps, sessionId))) return ERASED;
  await storeCall(() => deps.store.erase(sessionId));
  return ERASED;
}
