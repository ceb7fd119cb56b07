import { create } from "@bufbuild/protobuf";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type StartSuggestionResponse,
  StartSuggestionResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";

/**
 * A Start's answer, the one object every caller of its flight gets: frozen in depth when
 * its suggestion is (the store's are), so that the gRPC fast path encodes it once for
 * all of them (transport/encoded-once.ts), as it does a read's.
 */
export function startResponse(started: Suggestion): StartSuggestionResponse {
  const response = create(StartSuggestionResponseSchema, {
    chatId: started.chatId,
    suggestion: started,
  });
  return Object.isFrozen(started) ? Object.freeze(response) : response;
}
