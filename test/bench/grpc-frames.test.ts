import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  GrpcFrameReader,
  grpcStatusOf,
  pathOf,
  requestFrame,
  WATCH_SUGGESTIONS_PATH,
} from "../../bench/grpc-frames.js";
import {
  ListSuggestionsRequestSchema,
  SuggestionService,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";

describe("pathOf", () => {
  it("is the gRPC path of a method: /package.Service/Method", () => {
    expect(pathOf(SuggestionService.method.startSuggestion)).toBe(
      "/oda.suggest.v1.SuggestionService/StartSuggestion",
    );
    expect(WATCH_SUGGESTIONS_PATH).toBe("/oda.suggest.v1.SuggestionService/WatchSuggestions");
  });
});

describe("requestFrame", () => {
  it("prefixes the protobuf encoding with an uncompressed flag and its big-endian length", () => {
    const frame = requestFrame(ListSuggestionsRequestSchema, { sessionId: "chat-1" });
    // field 1, length-delimited (0x0a), 6 bytes: "chat-1"
    expect([...frame]).toEqual([0, 0, 0, 0, 8, 0x0a, 6, ...Buffer.from("chat-1")]);
    expect(fromBinary(ListSuggestionsRequestSchema, frame.subarray(5)).sessionId).toBe("chat-1");
  });

  it("frames an empty message as five bytes", () => {
    expect([...requestFrame(ListSuggestionsRequestSchema, {})]).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("GrpcFrameReader", () => {
  const a = requestFrame(ListSuggestionsRequestSchema, { sessionId: "a" });
  const b = requestFrame(ListSuggestionsRequestSchema, { sessionId: "bb".repeat(200) });
  const both = Buffer.concat([a, b]);

  it("cuts several frames out of one chunk", () => {
    const reader = new GrpcFrameReader();
    const messages = reader.push(both);
    expect(messages.map((m) => fromBinary(ListSuggestionsRequestSchema, m).sessionId)).toEqual([
      "a",
      "bb".repeat(200),
    ]);
    expect(reader.buffered).toBe(0);
  });

  it("joins a frame split over many chunks, byte by byte", () => {
    const reader = new GrpcFrameReader();
    const messages: Buffer[] = [];
    for (let i = 0; i < both.length; i++) messages.push(...reader.push(both.subarray(i, i + 1)));
    expect(messages.map((m) => m.length)).toEqual([a.length - 5, b.length - 5]);
    expect(reader.buffered).toBe(0);
  });

  it("keeps an incomplete frame until the rest arrives", () => {
    const reader = new GrpcFrameReader();
    expect(reader.push(b.subarray(0, 100))).toEqual([]);
    expect(reader.buffered).toBe(100);
    expect(reader.push(b.subarray(100))).toHaveLength(1);
  });

  it("answers an empty message for a zero-length frame", () => {
    const messages = new GrpcFrameReader().push(Buffer.from([0, 0, 0, 0, 0]));
    expect(messages).toHaveLength(1);
    expect(messages[0]?.length).toBe(0);
  });

  it("refuses a compressed frame", () => {
    expect(() => new GrpcFrameReader().push(Buffer.from([1, 0, 0, 0, 0]))).toThrow(/compressed/);
  });
});

describe("grpcStatusOf", () => {
  it("reads the trailers first, then a trailers-only answer's headers", () => {
    expect(grpcStatusOf({ "content-type": "application/grpc" }, { "grpc-status": "0" })).toBe(0);
    expect(grpcStatusOf({ "grpc-status": "5" }, undefined)).toBe(5);
    expect(grpcStatusOf({ "grpc-status": "5" }, { "grpc-status": "0" })).toBe(0);
  });

  it("answers undefined when no status came or it is not a number", () => {
    expect(grpcStatusOf({ "content-type": "application/grpc" }, undefined)).toBeUndefined();
    expect(grpcStatusOf(undefined, { "grpc-status": "ok" })).toBeUndefined();
  });
});
