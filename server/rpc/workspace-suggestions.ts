import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import {
  type ListWorkspaceSuggestionsRequest,
  type ListWorkspaceSuggestionsResponse,
  ListWorkspaceSuggestionsResponseSchema,
  type WatchWorkspaceSuggestionsRequest,
  type WatchWorkspaceSuggestionsResponse,
  WatchWorkspaceSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { requireId } from "../domain/ids.js";
import { decodePageToken, encodePageToken, inboxPageSize } from "../domain/inbox-page.js";
import type { InboxEntry } from "../store/inbox-entries.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import type { WatchHub } from "../store/watch-hub.js";
import { withInboxEncoding } from "./encoded-response.js";
import { storeCall } from "./errors.js";
import { WORKSPACE_WATCH_HEARTBEAT } from "./shared-responses.js";
import { heartbeatMsOf, watchedStream } from "./watched-stream.js";

/** What the workspace inbox handlers need. */
export interface WorkspaceSuggestionsDeps {
  readonly store: SuggestionStore;
  /** The instance's fan-out. */
  readonly watchHub: WatchHub;
}

/**
 * ListWorkspaceSuggestions: the open suggestions of every chat of the workspace, newest
 * offer first, each read from its chat's log (store/workspace-inbox.ts), paged as
 * AIP-158 asks: page_size 0 is 50, more than 500 is 500, negative is INVALID_ARGUMENT;
 * page_token is the opaque next_page_token of the page before, anything else
 * INVALID_ARGUMENT. A page may hold fewer than page_size while a next_page_token says
 * more follow. The workspace id follows the session id rule; every check comes before
 * Redis. Pinned by test/rpc/workspace-list.test.ts.
 */
export async function listWorkspaceSuggestions(
  deps: Pick<WorkspaceSuggestionsDeps, "store">,
  request: ListWorkspaceSuggestionsRequest,
): Promise<ListWorkspaceSuggestionsResponse> {
  const workspaceId = requireId("workspace_id", request.workspaceId);
  const size = inboxPageSize(request.pageSize);
  const after = decodePageToken(request.pageToken);
  const page = await storeCall(() => deps.store.inbox.page(workspaceId, size, after));
  const response = create(ListWorkspaceSuggestionsResponseSchema, {
    suggestions: page.entries.map((e) => e.suggestion),
    nextPageToken: page.next === "" ? "" : encodePageToken(page.next),
  });
  return withInboxEncoding(response);
}

/**
 * WatchWorkspaceSuggestions: the first page of ListWorkspaceSuggestions at once, then
 * again after every change in a chat of the workspace made through any instance (the
 * workspace's pub/sub channel), with heartbeats as WatchSuggestions. It ends as
 * WatchSuggestions does: DEADLINE_EXCEEDED at the deadline, UNAVAILABLE when the server
 * shuts down or Redis fails under it.
 */
export function watchWorkspaceSuggestions(
  deps: WorkspaceSuggestionsDeps,
  request: WatchWorkspaceSuggestionsRequest,
  context: HandlerContext,
): AsyncIterableIterator<WatchWorkspaceSuggestionsResponse> {
  const workspaceId = requireId("workspace_id", request.workspaceId);
  const heartbeatMs = heartbeatMsOf(request.heartbeatSeconds);
  const pages = deps.watchHub.watchWorkspace(workspaceId, context.signal, heartbeatMs);
  const respond = (entries: InboxEntry[]) =>
    create(WatchWorkspaceSuggestionsResponseSchema, {
      suggestions: entries.map((e) => e.suggestion),
    });
  return watchedStream(pages, respond, context.signal, WORKSPACE_WATCH_HEARTBEAT);
}
