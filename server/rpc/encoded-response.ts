import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { type Suggestion, SuggestionSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { ListWorkspaceSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { encodeBinary } from "../codec/binary-encoding.js";
import { withEncoding } from "../codec/encoded-message.js";

/** Each suggestion object's encoding, made once; gone with the object. */
// A side table of each suggestion's bytes, derived from that (never changed) suggestion only.
const suggestionBytes = new WeakMap<Suggestion, Uint8Array>();

/**
 * Attaches to a ListWorkspaceSuggestionsResponse its encoding, built from each
 * suggestion's encoding (protobuf-es's reflective `toBinary` costs about 6 µs per
 * suggestion here, most of a page of 50's CPU). The store answers the same suggestion
 * object for the same offer record (store/inbox-entries.ts `InboxEntries`), so an
 * encoding kept by object is always that object's. Pinned by
 * test/rpc/workspace-list.test.ts, which decodes the attached bytes and compares them
 * with the fields.
 */
export function withInboxEncoding(
  response: ListWorkspaceSuggestionsResponse,
): ListWorkspaceSuggestionsResponse {
  const writer = new BinaryWriter();
  for (const suggestion of response.suggestions) {
    let bytes = suggestionBytes.get(suggestion);
    if (bytes === undefined) {
      bytes = encodeBinary(SuggestionSchema, suggestion, 0, true);
      suggestionBytes.set(suggestion, bytes);
    }
    writer.tag(1, WireType.LengthDelimited).bytes(bytes);
  }
  if (response.nextPageToken !== "") {
    writer.tag(2, WireType.LengthDelimited).string(response.nextPageToken);
  }
  return withEncoding(response, writer.finish());
}
