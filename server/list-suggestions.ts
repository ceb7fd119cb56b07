import { Code, ConnectError } from "@connectrpc/connect";
import type {
  GetSuggestionRequest,
  GetSuggestionResponse,
  ListSuggestionsRequest,
  ListSuggestionsResponse,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestionServiceDeps } from "./suggestion-service.js";

/** ListSuggestions: open offers newest first, settled ones in offer order. (issue 3) */
export async function listSuggestions(
  _deps: SuggestionServiceDeps,
  _request: ListSuggestionsRequest,
): Promise<ListSuggestionsResponse> {
  throw new ConnectError("ListSuggestions is not implemented yet", Code.Unimplemented);
}

/** GetSuggestion: one suggestion as it stands. (issue 3) */
export async function getSuggestion(
  _deps: SuggestionServiceDeps,
  _request: GetSuggestionRequest,
): Promise<GetSuggestionResponse> {
  throw new ConnectError("GetSuggestion is not implemented yet", Code.Unimplemented);
}
