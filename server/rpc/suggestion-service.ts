import type { ServiceImpl } from "@connectrpc/connect";
import type { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { ChatHost } from "../host/chat-host.js";
import type { EmbeddedChatHost } from "../host/embedded-host.js";
import type { StartLocks } from "../store/start-locks.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import type { WatchHub } from "../store/watch-hub.js";
import { callEndOf } from "./call-end.js";
import { deleteSuggestions } from "./delete-suggestions.js";
import { listSettlements } from "./list-settlements.js";
import { getSuggestion, listSuggestions } from "./list-suggestions.js";
import { dismissSuggestion, draftSuggestion, restoreSuggestion } from "./settle-suggestion.js";
import type { StartFlights } from "./start-flights.js";
import { startSuggestion } from "./start-suggestion.js";
import { suggestTask } from "./suggest-task.js";
import { watchSuggestions } from "./watch-suggestions.js";
import { withdrawSuggestion } from "./withdraw-suggestion.js";
import { listWorkspaceSuggestions, watchWorkspaceSuggestions } from "./workspace-suggestions.js";

/** What the SuggestionService handlers share. */
export interface SuggestionServiceDeps {
  readonly store: SuggestionStore;
  readonly host: ChatHost;
  /** Makes the id of a new offer; random by default. */
  readonly newId?: () => string;
  /** The instance's StartSuggestion locks; server.ts makes it. */
  readonly startLocks: StartLocks;
  /** The instance's concurrent Starts joined per suggestion; server.ts makes them, once. */
  readonly startFlights: StartFlights;
  /** The embedded host, when it is the host (no `CHAT_HOST_URL`); StartSuggestion reads its sessions' records. */
  readonly embeddedHost?: EmbeddedChatHost | undefined;
  /** The instance's WatchSuggestions fan-out; server.ts makes it. */
  readonly watchHub: WatchHub;
}

/**
 * The SuggestionService implementation, written once and served by every transport.
 * Each RPC lives in a module of its own; this only binds them to their dependencies.
 */
export function createSuggestionService(
  deps: SuggestionServiceDeps,
): ServiceImpl<typeof SuggestionService> {
  return {
    suggestTask: (request) => suggestTask(deps, request),
    listSuggestions: (request) => listSuggestions(deps, request),
    getSuggestion: (request) => getSuggestion(deps, request),
    // The call's end is read only by a Start that waits on another's flight (start-flights.ts).
    startSuggestion: (request, context) => startSuggestion(deps, request, () => callEndOf(context)),
    draftSuggestion: (request) => draftSuggestion(deps, request),
    dismissSuggestion: (request) => dismissSuggestion(deps, request),
    restoreSuggestion: (request) => restoreSuggestion(deps, request),
    watchSuggestions: (request, context) => watchSuggestions(deps, request, context),
    withdrawSuggestion: (request) => withdrawSuggestion(deps, request),
    listSettlements: (request) => listSettlements(deps, request),
    listWorkspaceSuggestions: (request) => listWorkspaceSuggestions(deps, request),
    watchWorkspaceSuggestions: (request, context) =>
      watchWorkspaceSuggestions(deps, request, context),
    deleteSuggestions: (request) => deleteSuggestions(deps, request),
  };
}
