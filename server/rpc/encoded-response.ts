import { toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { type Suggestion, SuggestionSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { ListWorkspaceSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { withEncoding } from "../codec/encoded-message.js";

/** Encodings of open suggestions by inbox member; an open offer's never changes. */
const suggestionBytes = new Map<string, Uint8Array>();
const CACHED_SUGGESTIONS = 20_000;

/**
 * Attaches to a ListWorkspaceSuggestionsResponse its encoding, built from each
 * suggestion's encoding, kept by its inbox member (protobuf-es's reflective `toBinary`
 * costs about 6 µs per suggestion here, most of a page of 50's CPU). The members are
 * unique per offer and an open offer's record never changes, so a kept encoding stays
 * right; the oldest go first beyond 20,000. Pinned by test/rpc/workspace-list.test.ts,
 * which decodes the attached bytes and compares them with the fields.
 */
export function withInboxEncoding(
  response: ListWorkspaceSuggestionsResponse,
  members: readonly string[],
): ListWorkspaceSuggestionsResponse {
  const writer = new BinaryWriter();
  response.suggestions.forEach((suggestion: Suggestion, i) => {
    const member = members[i] as string;
    let bytes = suggestionBytes.get(member);
    if (bytes === undefined) {
      bytes = toBinary(SuggestionSchema, suggestion);
      if (suggestionBytes.size >= CACHED_SUGGESTIONS) {
        suggestionBytes.delete(suggestionBytes.keys().next().value as string);
      }
      suggestionBytes.set(member, bytes);
    }
    writer.tag(1, WireType.LengthDelimited).bytes(bytes);
  });
  if (response.nextPageToken !== "") {
    writer.tag(2, WireType.LengthDelimited).string(response.nextPageToken);
  }
  return withEncoding(response, writer.finish());
}
