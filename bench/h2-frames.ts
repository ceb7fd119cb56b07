/**
 * The lean generator's client: unary gRPC calls written as HTTP/2 frames straight on a
 * TCP socket, with none of node:http2's per-stream objects and events. On two cores the
 * generator, the service and Redis take turns; a node:http2 client cost about half of
 * what the service spent on a SuggestTask, so its turns held the service back (the
 * window was limited by "waiting" while h2load, posting one body over and over, kept
 * the same service busy). This client frames pre-encoded bodies, batches a turn's
 * writes into one, and reads only frame headers and DATA:
 * - request headers are HPACK literals without indexing and without Huffman (static
 *   table names), so the client keeps no HPACK state;
 * - response headers are never decoded (the server's HPACK state is never needed): a
 *   unary gRPC answer of this service is one message then trailers when its status is
 *   0, and trailers alone otherwise (server/transport/grpc-fast-path/, and connect-node
 *   likewise), so a call succeeded when its stream brought one message and ended without
 *   a reset. test/bench/h2-frames.test.ts pins that rule against the service; the callers
 *   check the message itself where it says more (SuggestTask's is the recorded offer);
 * - flow control: the client opens its own windows wide at once and tops up the
 *   connection's; it sends within the server's connection window, its frame size (a
 *   body must fit one DATA frame) and its limit of concurrent streams, queueing the rest;
 * - GOAWAY: the streams the server says it took are still answered; the others, and
 *   every later call, fail.
 * Pinned by test/bench/h2-frames.test.ts against a node:http2 server and the service.
 */
import net from "node:net";
import { GrpcFrameReader } from "./grpc-frames.js";
import type { UnaryAnswer } from "./h2-client.js";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
enum Type {
  Data = 0,
  Headers = 1,
  RstStream = 3,
  Settings = 4,
  Ping = 6,
  GoAway = 7,
  WindowUpdate = 8,
  Continuation = 9,
}
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const MAX_WINDOW = 2 ** 31 - 1;
const DEFAULT_WINDOW = 65_535;
const SETTINGS_ENABLE_PUSH = 0x2;
const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
const SETTINGS_MAX_FRAME_SIZE = 0x5;
const DEFAULT_MAX_FRAME = 16_384;

/** Writes a frame (its 9-byte header, then `payload`) into `out` at `at`; answers its end. */
function putFrame(
  out: Buffer,
  at: number,
  type: number,
  flags: number,
  stream: number,
  payload: Buffer,
): number {
  out.writeUIntBE(payload.length, at, 3);
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(stream, at + 5);
  payload.copy(out, at + 9);
  return at + 9 + payload.length;
}

/** A frame header and its payload, as one buffer. */
function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(9 + payload.length);
  putFrame(out, 0, type, flags, stream, payload);
  return out;
}

/** An HPACK integer with an `n`-bit prefix whose high bits are `first` (RFC 7541 5.1). */
function hpackInteger(value: number, n: number, first: number): number[] {
  const max = (1 << n) - 1;
  if (value < max) return [first | value];
  const bytes = [first | max];
  let rest = value - max;
  while (rest >= 128) {
    bytes.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return bytes;
}

/** An HPACK string literal without Huffman coding. */
function hpackString(text: string): number[] {
  const bytes = [...Buffer.from(text, "latin1")];
  return [...hpackInteger(bytes.length, 7, 0), ...bytes];
}

/**
 * The request header block of a gRPC call to `path` (RFC 7541: indexed `:method POST`
 * and `:scheme http`, literals without indexing for the rest).
 */
export function requestHeaderBlock(authority: string, path: string): Buffer {
  return Buffer.from([
    0x83, // :method POST (static 3)
    0x86, // :scheme http (static 6)
    ...hpackInteger(4, 4, 0x00), // :path (static name 4)
    ...hpackString(path),
    ...hpackInteger(1, 4, 0x00), // :authority (static name 1)
    ...hpackString(authority),
    ...hpackInteger(31, 4, 0x00), // content-type (static name 31)
    ...hpackString("application/grpc"),
    0x00, // te: a new name
    ...hpackString("te"),
    ...hpackString("trailers"),
  ]);
}

/**
 * A failed answer, given in a later turn of the event loop: a loop of calls that all
 * fail at once (a lost connection) still lets timers, such as the window's end, run.
 */
function failedLater(error: string): Promise<UnaryAnswer> {
  return new Promise((resolve) =>
    setImmediate(resolve, { status: -1, message: Buffer.alloc(0), error }),
  );
}

/** One call in flight: its message so far and how to answer it. */
interface Pending {
  readonly reader: GrpcFrameReader;
  message: Buffer | undefined;
  messages: number;
  readonly resolve: (answer: UnaryAnswer) => void;
}

/** One HTTP/2 connection of unary gRPC calls. */
export class FramedGrpcConnection {
  readonly #socket: net.Socket;
  readonly #authority: string;
  readonly #blocks = new Map<string, Buffer>();
  readonly #pending = new Map<number, Pending>();
  /** Calls not sent yet: they wait for the server's connection window or a stream. */
  readonly #waiting: { stream: number; bytes: Buffer; size: number }[] = [];
  #out: Buffer[] = [];
  #flushScheduled = false;
  #in: Buffer = Buffer.alloc(0);
  #nextStream = 1;
  #sendWindow = DEFAULT_WINDOW;
  #streamWindow = DEFAULT_WINDOW;
  #maxFrame = DEFAULT_MAX_FRAME;
  #maxStreams = Number.POSITIVE_INFINITY;
  /** Streams sent and not ended yet. */
  #open = 0;
  #received = 0;
  #failure: string | undefined;

  private constructor(socket: net.Socket, authority: string) {
    this.#socket = socket;
    this.#authority = authority;
    socket.on("data", (chunk: Buffer) => this.#read(chunk));
    socket.on("error", (err) => this.#fail(`the connection failed: ${err.message}`));
    socket.on("close", () => this.#fail("the connection closed"));
    const settings = Buffer.alloc(12);
    settings.writeUInt16BE(SETTINGS_ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(MAX_WINDOW, 8);
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(MAX_WINDOW - DEFAULT_WINDOW, 0);
    this.#send(PREFACE);
    this.#send(frame(Type.Settings, 0, 0, settings));
    this.#send(frame(Type.WindowUpdate, 0, 0, increment));
  }

  /** Connects to `address` (host:port, `[v6]:port`); resolves once the socket is open. */
  static connect(address: string): Promise<FramedGrpcConnection> {
    const colon = address.lastIndexOf(":");
    const host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
    const port = Number(address.slice(colon + 1));
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port, noDelay: true });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(new FramedGrpcConnection(socket, address));
      });
    });
  }

  /** `count` connections to `address`, once each is open. */
  static connectAll(address: string, count: number): Promise<FramedGrpcConnection[]> {
    return Promise.all(Array.from({ length: count }, () => FramedGrpcConnection.connect(address)));
  }

  /** One unary call of a pre-framed body (bench/grpc-frames.ts); never rejects. */
  call(path: string, body: Buffer): Promise<UnaryAnswer> {
    if (this.#failure !== undefined) return failedLater(this.#failure);
    if (body.length > Math.min(this.#streamWindow, this.#maxFrame)) {
      return failedLater("the body does not fit one DATA frame in the server's window");
    }
    let block = this.#blocks.get(path);
    if (block === undefined) {
      block = requestHeaderBlock(this.#authority, path);
      this.#blocks.set(path, block);
    }
    const stream = this.#nextStream;
    if (stream > MAX_WINDOW) return failedLater("this connection's stream ids are used up");
    this.#nextStream += 2;
    // HEADERS then DATA, written into one buffer.
    const bytes = Buffer.allocUnsafe(18 + block.length + body.length);
    const data = putFrame(bytes, 0, Type.Headers, END_HEADERS, stream, block);
    putFrame(bytes, data, Type.Data, END_STREAM, stream, body);
    return new Promise((resolve) => {
      this.#pending.set(stream, {
        reader: new GrpcFrameReader(),
        message: undefined,
        messages: 0,
        resolve,
      });
      this.#waiting.push({ stream, bytes, size: body.length });
      this.#sendWithinWindow();
    });
  }

  /** Closes the connection; calls still in flight answer failed. */
  close(): void {
    this.#fail("the connection was closed");
    this.#socket.destroy();
  }

  #sendWithinWindow(): void {
    while (this.#waiting.length > 0) {
      const next = this.#waiting[0] as { stream: number; bytes: Buffer; size: number };
      if (next.size > this.#sendWindow || this.#open >= this.#maxStreams) return;
      this.#sendWindow -= next.size;
      this.#open++;
      this.#waiting.shift();
      this.#send(next.bytes);
    }
  }

  /** Queues bytes; a turn's writes go out as one. */
  #send(bytes: Buffer): void {
    this.#out.push(bytes);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      const out = this.#out;
      this.#out = [];
      if (!this.#socket.destroyed) {
        this.#socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out));
      }
    });
  }

  #read(chunk: Buffer): void {
    try {
      this.#readFrames(chunk);
    } catch (err) {
      // A frame this client cannot read: the connection is of no more use.
      this.#fail(`an unreadable answer: ${(err as Error).message}`);
      this.#socket.destroy();
    }
  }

  #readFrames(chunk: Buffer): void {
    let data = this.#in.length === 0 ? chunk : Buffer.concat([this.#in, chunk]);
    while (data.length >= 9) {
      const length = data.readUIntBE(0, 3);
      if (data.length < 9 + length) break;
      const type = data[3] as number;
      const flags = data[4] as number;
      const stream = data.readUInt32BE(5) & 0x7fffffff;
      this.#frame(type, flags, stream, data.subarray(9, 9 + length));
      data = data.subarray(9 + length);
    }
    this.#in = data;
  }

  #frame(type: number, flags: number, stream: number, payload: Buffer): void {
    switch (type) {
      case Type.Data: {
        this.#received += payload.length;
        if (this.#received > 2 ** 30) {
          const increment = Buffer.alloc(4);
          increment.writeUInt32BE(this.#received, 0);
          this.#send(frame(Type.WindowUpdate, 0, 0, increment));
          this.#received = 0;
        }
        const call = this.#pending.get(stream);
        if (call === undefined) return;
        const pad = flags & PADDED ? (payload[0] as number) : -1;
        const content = pad < 0 ? payload : payload.subarray(1, payload.length - pad);
        for (const message of call.reader.push(content)) {
          call.message ??= message;
          call.messages++;
        }
        if (flags & END_STREAM) this.#end(stream, call);
        return;
      }
      case Type.Headers:
      case Type.Continuation: {
        // Only the end of the stream matters; the header block itself is never read.
        const call = this.#pending.get(stream);
        if (call !== undefined && flags & END_STREAM) this.#end(stream, call);
        return;
      }
      case Type.RstStream: {
        const call = this.#pending.get(stream);
        if (call === undefined) return;
        this.#closed(stream);
        call.resolve({
          status: -1,
          message: Buffer.alloc(0),
          error: `the server reset the stream (code ${payload.readUInt32BE(0)})`,
        });
        return;
      }
      case Type.Settings:
        if (flags & ACK) return;
        for (let i = 0; i + 6 <= payload.length; i += 6) {
          const value = payload.readUInt32BE(i + 2);
          switch (payload.readUInt16BE(i)) {
            case SETTINGS_INITIAL_WINDOW_SIZE:
              this.#streamWindow = value;
              break;
            case SETTINGS_MAX_FRAME_SIZE:
              this.#maxFrame = value;
              break;
            case SETTINGS_MAX_CONCURRENT_STREAMS:
              this.#maxStreams = value;
              break;
          }
        }
        this.#send(frame(Type.Settings, ACK, 0, Buffer.alloc(0)));
        return;
      case Type.Ping:
        if (!(flags & ACK)) this.#send(frame(Type.Ping, ACK, 0, payload));
        return;
      case Type.WindowUpdate:
        if (stream === 0) {
          this.#sendWindow += payload.readUInt32BE(0) & 0x7fffffff;
          this.#sendWithinWindow();
        }
        return;
      case Type.GoAway:
        this.#goAway(payload.readUInt32BE(0) & 0x7fffffff, payload.readUInt32BE(4));
        return;
    }
  }

  /**
   * A stream ended (END_STREAM on its trailers, or on a DATA frame): one message means
   * grpc-status 0 for this service's unary answers; none means trailers alone (an
   * error status), more is not a unary answer.
   */
  #end(stream: number, call: Pending): void {
    this.#closed(stream);
    if (call.messages === 1 && call.reader.buffered === 0) {
      call.resolve({ status: 0, message: call.message as Buffer });
      return;
    }
    call.resolve({
      status: -1,
      message: call.message ?? Buffer.alloc(0),
      error:
        call.messages === 0
          ? "the answer had no message (trailers alone: a status other than 0)"
          : `the answer had ${call.messages} messages`,
    });
  }

  /** A sent stream ended: its place goes to the next call waiting, if any. */
  #closed(stream: number): void {
    this.#pending.delete(stream);
    this.#open--;
    this.#sendWithinWindow();
  }

  /**
   * The server takes no stream above `last`: those calls, the ones not sent yet and every
   * later one fail; the streams it took are still answered.
   */
  #goAway(last: number, code: number): void {
    const reason = `the server sent GOAWAY (code ${code})`;
    this.#failure ??= reason;
    this.#waiting.length = 0;
    for (const [stream, call] of this.#pending) {
      if (stream <= last) continue;
      this.#pending.delete(stream);
      call.resolve({ status: -1, message: Buffer.alloc(0), error: reason });
    }
  }

  #fail(reason: string): void {
    this.#failure ??= reason;
    for (const [stream, call] of this.#pending) {
      this.#pending.delete(stream);
      call.resolve({ status: -1, message: Buffer.alloc(0), error: reason });
    }
    this.#waiting.length = 0;
  }
}
