import type { HandlerContext } from "@connectrpc/connect";
import type {
  WatchSuggestionsRequest,
  WatchSuggestionsResponse,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { requireId } from "../domain/ids.js";
import type { WatchHub } from "../store/watch-hub.js";
import { WATCH_HEARTBEAT, watchResponseOf } from "./shared-responses.js";
import { heartbeatMsOf, watchedStream } from "./watched-stream.js";

/** What the watch handler needs. */
export interface WatchSuggestionsDeps {
  /** The instance's fan-out. */
  readonly watchHub: WatchHub;
}

/**
 * WatchSuggestions: the lists of ListSuggestions at once, then after every change made
 * through any instance; with `heartbeat_seconds`, a `heartbeat = true` message at that
 * interval while nothing changes. It ends with DEADLINE_EXCEEDED when the call's
 * deadline passes, and with UNAVAILABLE when the server shuts down or Redis fails under
 * it (the client watches again); never with OK while the client listens.
 */
export function watchSuggestions(
  deps: WatchSuggestionsDeps,
  request: WatchSuggestionsRequest,
  context: HandlerContext,
): AsyncIterableIterator<WatchSuggestionsResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  const heartbeatMs = heartbeatMsOf(request.heartbeatSeconds);
  // One message per version, shared by every watcher of the chat on this instance.
  const lists = deps.watchHub.watch(sessionId, context.signal, heartbeatMs);
  return watchedStream(lists, watchResponseOf, context.signal, WATCH_HEARTBEAT);
}
