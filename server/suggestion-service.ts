import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { SuggestionService } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { ChatHost } from "./chat-host.js";
import { getSuggestion, listSuggestions } from "./list-suggestions.js";
import { suggestTask } from "./suggest-task.js";
import type { SuggestionStore } from "./suggestion-store.js";

/** What the SuggestionService handlers share. */
export interface SuggestionServiceDeps {
  readonly store: SuggestionStore;
  readonly host: ChatHost;
  /** Makes the id of a new offer; random by default. */
  readonly newId?: () => string;
}

function unimplemented(name: string): never {
  throw new ConnectError(`${name} is not implemented yet`, Code.Unimplemented);
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
    startSuggestion: () => unimplemented("StartSuggestion"),
    draftSuggestion: () => unimplemented("DraftSuggestion"),
    dismissSuggestion: () => unimplemented("DismissSuggestion"),
    restoreSuggestion: () => unimplemented("RestoreSuggestion"),
    // biome-ignore lint/correctness/useYield: answers UNIMPLEMENTED until issue 3
    async *watchSuggestions() {
      unimplemented("WatchSuggestions");
    },
  };
}
