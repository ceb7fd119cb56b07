/**
 * The gRPC wire as the bench's own clients speak it, with no gRPC library in the way:
 * requests encoded once before a measured window, and response frames cut out of the
 * HTTP/2 data as it arrives. Pure functions; test/bench/grpc-frames.test.ts pins them.
 */
import type { IncomingHttpHeaders } from "node:http2";
import type { DescMessage, DescMethod, MessageInitShape } from "@bufbuild/protobuf";
import { SuggestionService } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { frameOf } from "../server/transport/grpc-wire.js";

/** A method's HTTP/2 path, `/package.Service/Method`, from its generated descriptor. */
export function pathOf(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/** The path every watcher of the bench opens. */
export const WATCH_SUGGESTIONS_PATH = pathOf(SuggestionService.method.watchSuggestions);

/**
 * One request message in its gRPC frame (uncompressed flag, 4-byte big-endian length,
 * the protobuf-es binary encoding), ready to be written as a stream's whole body. The
 * generator encodes every body with this before its window opens, so that encoding
 * costs nothing while it measures.
 */
export function requestFrame<Desc extends DescMessage>(
  schema: Desc,
  init: MessageInitShape<Desc>,
): Buffer {
  return frameOf(schema, init);
}

/**
 * Cuts gRPC length-prefixed messages out of a stream's data chunks, however HTTP/2
 * split or joined them: a frame may span chunks and a chunk may hold many frames.
 * `push` answers the messages (payloads without their 5-byte prefix) completed by the
 * chunk, in order; a compressed frame is an error (the bench never asks for one).
 */
export class GrpcFrameReader {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    let data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const messages: Buffer[] = [];
    while (data.length >= 5) {
      if ((data[0] as number) & 1) throw new Error("a compressed gRPC frame arrived");
      const length = data.readUInt32BE(1);
      if (data.length < 5 + length) break;
      messages.push(data.subarray(5, 5 + length));
      data = data.subarray(5 + length);
    }
    this.pending = data;
    return messages;
  }

  /** Bytes of a frame begun and not yet complete: 0 at the end of a well-formed stream. */
  get buffered(): number {
    return this.pending.length;
  }
}

/**
 * The gRPC status of a response: `grpc-status` from its trailers, or from its headers
 * for a trailers-only answer; `undefined` when neither carries one (a broken answer).
 */
export function grpcStatusOf(
  headers: IncomingHttpHeaders | undefined,
  trailers: IncomingHttpHeaders | undefined,
): number | undefined {
  const value = trailers?.["grpc-status"] ?? headers?.["grpc-status"];
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}
