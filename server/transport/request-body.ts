import type { DescMessage, DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression, UniversalServerRequest } from "@connectrpc/connect/protocol";
import {
  type CallerTimeout,
  connectTimeout,
  grpcTimeout,
  MAX_GRPC_TIMEOUT,
  MAX_TIMER_MS,
} from "./call-timeout.js";
import { parseJsonRequest, parseRequestMessage } from "./request-message.js";

/*
 * How connect-node's adapter (connect-adapter.ts) reads a call before connect-node sees
 * it, so that every protocol and every encoding answers bad input as the gRPC fast path
 * does: the caller's deadline header, then the request's body read whole, decompressed
 * and parsed here. connect-node is then handed a body it reads as it is (uncompressed,
 * known to parse), or a refusal it answers in the call's own protocol.
 */

/** How a request's content type frames its message, and which header names its encoding. */
interface Framing {
  readonly envelopes: boolean;
  readonly json: boolean;
  readonly encodingHeader: string;
  readonly timeout: (value: string | null) => CallerTimeout;
  readonly timeoutHeader: string;
  /** The header's value for `MAX_TIMER_MS`. */
  readonly heldTimeout: string;
}

const GRPC = {
  timeout: grpcTimeout,
  timeoutHeader: "grpc-timeout",
  heldTimeout: MAX_GRPC_TIMEOUT,
} as const;
const CONNECT = {
  timeout: connectTimeout,
  timeoutHeader: "connect-timeout-ms",
  heldTimeout: String(MAX_TIMER_MS),
} as const;

/** The framing of a POST of this content type; undefined for what connect-node refuses. */
function framingOf(type: string): Framing | undefined {
  const grpc = /^application\/(grpc|grpc-web)(?:\+(proto|json))?(?:;|$)/.exec(type);
  if (grpc !== null) {
    return { envelopes: true, json: grpc[2] === "json", encodingHeader: "grpc-encoding", ...GRPC };
  }
  const stream = /^application\/connect\+(proto|json)(?:;|$)/.exec(type);
  if (stream !== null) {
    const json = stream[1] === "json";
    return { envelopes: true, json, encodingHeader: "connect-content-encoding", ...CONNECT };
  }
  const unary = /^application\/(proto|json)(?:;|$)/.exec(type);
  if (unary !== null) {
    const json = unary[1] === "json";
    return { envelopes: false, json, encodingHeader: "content-encoding", ...CONNECT };
  }
  return undefined;
}

/** A call as handed to connect-node, and the error it is refused with, if it is. */
export interface ReadCall {
  readonly request: UniversalServerRequest;
  readonly refused?: ConnectError | undefined;
}

/** What reading a call needs: the size bound, and the encodings connect-node accepts. */
export interface ReadOptions {
  readonly readMaxBytes: number;
  readonly compressions: readonly Compression[];
}

/**
 * Reads a unary or server-streaming POST before connect-node does:
 * - its deadline header (`grpc-timeout` for gRPC and gRPC-Web, `connect-timeout-ms` for
 *   Connect): malformed is INVALID_ARGUMENT, under a millisecond DEADLINE_EXCEEDED,
 *   longer than a Node timer can wait held at that (call-timeout.ts);
 * - its body read whole (up to `readMaxBytes` per message), each message decompressed
 *   when its encoding is one connect-node accepts (gzip, br), and parsed: a message
 *   that does not decompress or parse, or whose text is not UTF-8, is INVALID_ARGUMENT
 *   whatever its encoding (connect-node answers a binary parse failure INTERNAL).
 * A refused call is handed on with a body that fails with its error, so connect-node
 * answers it in the call's protocol without running the handler. A body over the bound,
 * an encoding not accepted or a framing error is handed on as it came, for connect-node
 * to refuse with its own texts. Pinned by test/e2e/bad-input-encodings.test.ts and
 * test/e2e/deadlines.test.ts.
 */
export async function readCall(
  req: UniversalServerRequest,
  method: DescMethod,
  options: ReadOptions,
): Promise<ReadCall> {
  const kind = method.methodKind;
  // A Connect GET (a read, its message in the URL): only its deadline is held.
  if (req.method === "GET") return { request: { ...req, header: held(req.header, CONNECT) } };
  if (req.method !== "POST" || (kind !== "unary" && kind !== "server_streaming")) {
    return { request: req };
  }
  const framing = framingOf(req.header.get("content-type") ?? "");
  if (framing === undefined) return { request: req };
  const timeout = framing.timeout(req.header.get(framing.timeoutHeader));
  if (timeout.error !== undefined) return refuse(req, framing, timeout.error);
  const header = held(req.header, framing);
  const body = req.body;
  if (body === null || typeof body !== "object" || !(Symbol.asyncIterator in body)) {
    return { request: header === req.header ? req : { ...req, header } };
  }
  const encodingName = header.get(framing.encodingHeader);
  const compression =
    encodingName === null || encodingName === "identity"
      ? null
      : options.compressions.find((c) => c.name === encodingName);
  if (compression === undefined)
    return { request: header === req.header ? req : { ...req, header } };
  const read = await readWhole(body, options.readMaxBytes + 5);
  if (read.whole === undefined) return { request: { ...req, header, body: read.rest } };
  let plain: Buffer;
  try {
    plain = await decoded(read.whole, framing, method.input, compression, options.readMaxBytes);
  } catch (err) {
    return refuse(req, framing, ConnectError.from(err, Code.InvalidArgument));
  }
  // Nothing decompressed (or a framing error, connect-node's to answer): handed on as it came.
  if (plain === read.whole) return { request: { ...req, header, body: once(plain) } };
  const plainHeader = new Headers(header);
  plainHeader.delete(framing.encodingHeader);
  plainHeader.delete("content-length");
  return { request: { ...req, header: plainHeader, body: once(plain) } };
}

/**
 * The headers with a deadline longer than a Node timer can wait held at that, so that it
 * is served as about 24 days rather than ended at once; the same headers otherwise.
 */
function held(
  header: Headers,
  framing: Pick<Framing, "timeout" | "timeoutHeader" | "heldTimeout">,
): Headers {
  if (framing.timeout(header.get(framing.timeoutHeader)).timeoutMs !== MAX_TIMER_MS) return header;
  const copy = new Headers(header);
  copy.set(framing.timeoutHeader, framing.heldTimeout);
  return copy;
}

/** The call refused with `error`: connect-node answers it, the handler never runs. */
function refuse(req: UniversalServerRequest, framing: Framing, error: ConnectError): ReadCall {
  const header = new Headers(req.header);
  // connect-node would answer its own texts for these first.
  header.delete(framing.timeoutHeader);
  header.delete(framing.encodingHeader);
  header.delete("content-length");
  return { request: { ...req, header, body: failing(error) }, refused: error };
}

/**
 * The body, whole when it is within `limit` bytes; else what was read and the rest, as
 * one stream to hand on. A body that fails while read (the client left) is handed on
 * failing so.
 */
async function readWhole(
  body: AsyncIterable<Uint8Array>,
  limit: number,
): Promise<{ whole?: Buffer; rest: AsyncIterable<Uint8Array> }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const iterator = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) break;
      chunks.push(next.value);
      size += next.value.byteLength;
      if (size > limit) return { rest: thenRest(chunks, iterator) };
    }
  } catch (err) {
    return { rest: failing(err) };
  }
  const whole = Buffer.concat(chunks, size);
  return { whole, rest: once(whole) };
}

/** The body's messages decompressed and parsed: the uncompressed body, to hand on. */
async function decoded(
  all: Buffer,
  framing: Framing,
  schema: DescMessage,
  compression: Compression | null,
  readMaxBytes: number,
): Promise<Buffer> {
  const parse = (bytes: Uint8Array) =>
    framing.json ? parseJsonRequest(schema, bytes) : parseRequestMessage(schema, bytes);
  const inflate = async (bytes: Uint8Array): Promise<Uint8Array> => {
    if (compression === null) return bytes;
    try {
      return await compression.decompress(bytes, readMaxBytes);
    } catch (err) {
      const error = ConnectError.from(err);
      // Data that does not decompress is the caller's error, whatever zlib called it.
      if (error.code === Code.ResourceExhausted) throw error;
      throw new ConnectError(error.rawMessage, Code.InvalidArgument, undefined, undefined, err);
    }
  };
  if (!framing.envelopes) {
    const plain = await inflate(all);
    parse(plain);
    return plain === all ? all : Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength);
  }
  const out: Uint8Array[] = [];
  let changed = false;
  let at = 0;
  while (at + 5 <= all.length) {
    const flags = all[at] as number;
    const length = all.readUInt32BE(at + 1);
    // A framing error is connect-node's to answer, with its own text.
    if ((flags & ~1) !== 0 || at + 5 + length > all.length) return all;
    const message = all.subarray(at + 5, at + 5 + length);
    if ((flags & 1) === 1 && compression === null) return all;
    const plain = (flags & 1) === 1 ? await inflate(message) : message;
    parse(plain);
    if (plain !== message) changed = true;
    const head = Buffer.alloc(5);
    head.writeUInt32BE(plain.byteLength, 1);
    out.push(head, plain);
    at += 5 + length;
  }
  if (!changed || at !== all.length) return all;
  return Buffer.concat(out);
}

/** A body of one chunk. */
async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** A body that fails with `error` when read. */
// biome-ignore lint/correctness/useYield: it only fails.
async function* failing(error: unknown): AsyncGenerator<Uint8Array> {
  throw error;
}

/** The chunks read, then the rest of the body. */
async function* thenRest(
  read: readonly Uint8Array[],
  iterator: AsyncIterator<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  yield* read;
  for (;;) {
    const next = await iterator.next();
    if (next.done === true) return;
    yield next.value;
  }
}
