import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { expect, test } from "vitest";
import {
  type SuggestTaskArgs,
  SuggestTaskArgsSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { connectErrorOf, grpcClients, startTestServer } from "../support/harness.js";

/** SuggestTaskArgs { title: "f" 0xff 0xfe, tldr: "b", brief: "c" }: the title is not UTF-8. */
const INVALID = Uint8Array.from([0x0a, 3, 0x66, 0xff, 0xfe, 0x12, 1, 0x62, 0x1a, 1, 0x63]);

/** How this process decodes the message: the text, or the error's message. */
function decode(bytes: Uint8Array): string {
  try {
    return (fromBinary(SuggestTaskArgsSchema, bytes) as SuggestTaskArgs).title;
  } catch (err) {
    return `error: ${err instanceof Error ? err.message : String(err)}`;
  }
}

// The server names a request's field whose text is not UTF-8 (server/transport/request-text.ts)
// without changing protobuf-es's decoding: a client in the same process (a Connect client,
// the remote chat host's client) decodes as protobuf-es does.
test("a server in the process leaves protobuf-es's decoding of other messages as it was", async () => {
  const valid = toBinary(
    SuggestTaskArgsSchema,
    create(SuggestTaskArgsSchema, { title: "Sé ✓ 🙂", tldr: "b", brief: "c" }),
  );
  const before = { invalid: decode(INVALID), valid: decode(valid) };
  expect(before.invalid).toMatch(/^error: /);
  expect(before.valid).toBe("Sé ✓ 🙂");

  const server = await startTestServer();
  try {
    // While the server runs (and after it has refused invalid text), decoding is unchanged.
    const clients = grpcClients(server.url);
    const listed = await clients.suggestions.listSuggestions({ sessionId: "s-utf8-scope" });
    expect(listed.open).toEqual([]);
    expect({ invalid: decode(INVALID), valid: decode(valid) }).toEqual(before);
    const refused = await connectErrorOf(
      clients.suggestions.suggestTask({
        context: { sessionId: "s-utf8-scope", turnId: "t", role: 1 },
        args: fromBinaryLoose(INVALID),
      }),
    );
    expect(Code[refused.code]).toBe(Code[Code.InvalidArgument]);
    expect(refused.rawMessage).toBe("args.title is not valid UTF-8");
    expect({ invalid: decode(INVALID), valid: decode(valid) }).toEqual(before);
  } finally {
    await server.close();
  }
});

/** The args with the bad bytes kept, as a client that does not check would send them. */
function fromBinaryLoose(bytes: Uint8Array): SuggestTaskArgs {
  const args = create(SuggestTaskArgsSchema, { tldr: "b", brief: "c" });
  // The title goes as unknown field 1: the same bytes on the wire as a title of them.
  args.$unknown = [{ no: 1, wireType: 2, data: bytes.subarray(1, 5) }];
  return args;
}
