import { create } from "@bufbuild/protobuf";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type GetSuggestionResponse,
  GetSuggestionResponseSchema,
  type ListSuggestionsResponse,
  ListSuggestionsResponseSchema,
  type WatchSuggestionsResponse,
  WatchSuggestionsResponseSchema,
  type WatchWorkspaceSuggestionsResponse,
  WatchWorkspaceSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestionLists } from "../domain/fold.js";

/*
 * The responses of the read RPCs, made once per version of a chat and shared by every
 * call and watcher of that version. The store hands out one frozen `SuggestionLists`
 * (and frozen suggestions) per version (store/lists-cache.ts), so a WeakMap keyed by
 * them lives exactly as long as the cache holds that version. The responses are frozen
 * too, in depth: the gRPC fast path then encodes each one once (transport's
 * `frameOf` reuses the bytes of a frozen message), whichever call sends it.
 */

// Side tables of frozen responses, derived from each frozen version (or suggestion) only.
const lists = new WeakMap<SuggestionLists, ListSuggestionsResponse>();
const watches = new WeakMap<SuggestionLists, WatchSuggestionsResponse>();
const gets = new WeakMap<Suggestion, GetSuggestionResponse>();

function frozen<T extends { open: unknown[]; settled: unknown[] }>(response: T): T {
  Object.freeze(response.open);
  Object.freeze(response.settled);
  return Object.freeze(response);
}

/** ListSuggestions' answer for these lists, the same object for the same lists. */
export function listResponseOf(of: SuggestionLists): ListSuggestionsResponse {
  let response = lists.get(of);
  if (response === undefined) {
    response = frozen(
      create(ListSuggestionsResponseSchema, { open: of.open, settled: of.settled }),
    );
    if (Object.isFrozen(of)) lists.set(of, response);
  }
  return response;
}

/** A WatchSuggestions message for these lists: one per version for all its watchers. */
export function watchResponseOf(of: SuggestionLists): WatchSuggestionsResponse {
  let response = watches.get(of);
  if (response === undefined) {
    response = frozen(
      create(WatchSuggestionsResponseSchema, { open: of.open, settled: of.settled }),
    );
    if (Object.isFrozen(of)) watches.set(of, response);
  }
  return response;
}

/** WatchSuggestions' heartbeat (`heartbeat = true`, no lists): one frozen message, encoded once. */
export const WATCH_HEARTBEAT: WatchSuggestionsResponse = frozen(
  create(WatchSuggestionsResponseSchema, { heartbeat: true }),
);

/** WatchWorkspaceSuggestions' heartbeat (`heartbeat = true`, no suggestions), encoded once. */
export const WORKSPACE_WATCH_HEARTBEAT: WatchWorkspaceSuggestionsResponse = (() => {
  const response = create(WatchWorkspaceSuggestionsResponseSchema, { heartbeat: true });
  Object.freeze(response.suggestions);
  return Object.freeze(response);
})();

/** GetSuggestion's answer for a suggestion, the same object for the same suggestion. */
export function getResponseOf(suggestion: Suggestion): GetSuggestionResponse {
  let response = gets.get(suggestion);
  if (response === undefined) {
    response = Object.freeze(create(GetSuggestionResponseSchema, { suggestion }));
    if (Object.isFrozen(suggestion)) gets.set(suggestion, response);
  }
  return response;
}
