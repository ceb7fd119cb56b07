import { Code, ConnectError } from "@connectrpc/connect";
import type { Session } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { type Suggestion, WorkspaceMissingReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionErrorCode } from "../domain/failures.js";
import { workspaceMissing } from "../domain/started-chat.js";
import type { ChatHost } from "../host/chat-host.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { dependencyError, foundSuggestion, storeCall, suggestionError } from "./errors.js";

/*
 * What a Start reads before it may start anything: the offering chat's session, which
 * must belong to a workspace, and the suggestion as the chat's log gives it.
 */

/**
 * The offering chat as a remote host knows it (`checkedSession`). A session the host
 * does not know cannot start anything: an offer it never made is not-found, and one it
 * made (the host has since forgotten the chat) belongs to no workspace now.
 */
export async function offeringSession(
  host: ChatHost,
  store: SuggestionStore,
  sessionId: string,
  suggestionId: string,
): Promise<Session> {
  let session: Session | undefined;
  try {
    ({ session } = await host.getSession({ sessionId }));
  } catch (err) {
    if (!(err instanceof ConnectError && err.code === Code.NotFound)) {
      throw dependencyError(err, "the chat host");
    }
  }
  if (session === undefined) await readSuggestion(store, sessionId, suggestionId);
  return checkedSession(sessionId, session);
}

/**
 * The offering chat, with a workspace and not in a scheduled task's folder; a session
 * the host does not know (once its offer is known to exist) belongs to no workspace.
 */
export function checkedSession(sessionId: string, session: Session | undefined): Session {
  const reason =
    session === undefined ? WorkspaceMissingReason.NO_WORKSPACE : workspaceMissing(session);
  if (session === undefined || reason !== undefined) {
    throw suggestionError({
      code: SuggestionErrorCode.WorkspaceMissing,
      sessionId,
      reason: reason ?? WorkspaceMissingReason.NO_WORKSPACE,
    });
  }
  return session;
}

/** One suggestion as the log's fold gives it; not-found when the log has no such offer. */
export async function readSuggestion(
  store: SuggestionStore,
  sessionId: string,
  suggestionId: string,
): Promise<Suggestion> {
  const suggestion = await storeCall(() => store.suggestion(sessionId, suggestionId));
  return foundSuggestion(suggestion, suggestionId);
}
