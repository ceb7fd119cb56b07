import { create } from "@bufbuild/protobuf";
import {
  type ListSettlementsRequest,
  type ListSettlementsResponse,
  ListSettlementsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { checkCursor } from "../domain/cursor.js";
import { requireId } from "../domain/ids.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { storeCall } from "./errors.js";

/** What the ListSettlements handler needs. */
export interface ListSettlementsDeps {
  readonly store: SuggestionStore;
}

/**
 * ListSettlements: the settlements of a chat the fold accepted, in log order, after the
 * opaque cursor `after` (empty: from the start), each with the suggestion as it stood
 * right after it; `cursor` is the last one's, or `after` when none follows it. The
 * cursors are the log's stream ids, checked before Redis sees them (a malformed one is
 * INVALID_ARGUMENT); the read is O(records after the cursor) (lua/settlements-2.lua). A
 * chat that never offered anything has none. Pinned by test/rpc/settlements.test.ts.
 */
export async function listSettlements(
  deps: ListSettlementsDeps,
  request: ListSettlementsRequest,
): Promise<ListSettlementsResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  const after = checkCursor("after", request.after);
  const settlements = await storeCall(() => deps.store.settlements(sessionId, after));
  return create(ListSettlementsResponseSchema, {
    settlements,
    cursor: settlements.at(-1)?.cursor ?? after,
  });
}
