import { create, toBinary } from "@bufbuild/protobuf";
import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { SuggestTaskRequestSchema } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { parseRequestMessage } from "../../server/transport/request-message.js";
import { configureProtobufText, invalidTextPath } from "../../server/transport/request-text.js";

/** A marker text of `n` bytes, replaced by invalid UTF-8 of the same length after encoding. */
const MARK = "\u0001MARK\u0001";
const BAD = Uint8Array.from([0x01, 0x4d, 0xff, 0xfe, 0x4b, 0x01]);

/** `bytes` with every MARK replaced by bytes that are not valid UTF-8. */
function spoiled(bytes: Uint8Array): Uint8Array {
  const out = Buffer.from(bytes);
  const mark = Buffer.from(MARK);
  for (let at = out.indexOf(mark); at >= 0; at = out.indexOf(mark, at + 1)) out.set(BAD, at);
  return out;
}

/** What parsing the request answers: its message, or the refusal's code and text. */
function refusal(bytes: Uint8Array): string {
  try {
    parseRequestMessage(SuggestTaskRequestSchema, bytes);
    return "parsed";
  } catch (err) {
    const e = ConnectError.from(err);
    return `${Code[e.code]}: ${e.rawMessage}`;
  }
}

test("a request's text that is not UTF-8 is refused naming the field, protobuf-es left as it is", () => {
  const decode = getTextEncoding().decodeUtf8;
  configureProtobufText();
  expect(getTextEncoding().decodeUtf8).toBe(decode);
  const request = (title: string, sessionId: string) =>
    toBinary(
      SuggestTaskRequestSchema,
      create(SuggestTaskRequestSchema, {
        context: { sessionId, turnId: "t" },
        args: { title, tldr: "b", brief: "c" },
      }),
    );
  expect(refusal(request("a", "s"))).toBe("parsed");
  expect(refusal(spoiled(request(MARK, "s")))).toBe(
    "InvalidArgument: args.title is not valid UTF-8",
  );
  expect(refusal(spoiled(request("a", MARK)))).toBe(
    "InvalidArgument: context.sessionId is not valid UTF-8",
  );
  // Bad text followed by bytes that are no message: the message does not parse.
  const cut = spoiled(request(MARK, "s"));
  expect(refusal(Uint8Array.from([...cut, 0x0a, 0x05, 0x01]))).toMatch(
    /^InvalidArgument: parse binary: /,
  );
});

test("the field is named as it reads in the decoded message: map keys, oneof values, list indexes", () => {
  const struct = create(StructSchema, {
    fields: {
      a: { kind: { case: "stringValue", value: "fine" } },
      b: {
        kind: {
          case: "listValue",
          value: {
            values: [
              { kind: { case: "stringValue", value: "x" } },
              { kind: { case: "stringValue", value: MARK } },
            ],
          },
        },
      },
    },
  });
  const bytes = spoiled(toBinary(StructSchema, struct));
  expect(invalidTextPath(StructSchema, bytes)).toBe("fields.b.kind.value.values[1].kind.value");
  expect(invalidTextPath(StructSchema, toBinary(StructSchema, struct))).toBeUndefined();
});
