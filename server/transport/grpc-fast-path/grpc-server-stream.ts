import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { frameOf, GRPC_OK, GRPC_RESPONSE_HEADERS, statusOf, toConnectError } from "../grpc-wire.js";
import { type Pushable, pushableOf } from "../handler-types.js";
import type { LazyContext } from "../lazy-handler-context.js";
import { type OpenCallOptions, openCall } from "./grpc-call.js";

/** A server-streaming method as the fast path routes it. */
export interface ServerStreamRoute {
  readonly service: DescService;
  readonly method: DescMethod;
  readonly fn: (request: unknown, context: HandlerContext) => AsyncIterable<unknown>;
}

/**
 * A server-streaming call in binary gRPC on its HTTP/2 stream (grpc-fast-path.ts hands
 * it the request's body): each message as it comes, then the status in trailers. The
 * client leaving closes the stream, which aborts the context's signal and so ends the
 * handler (WatchSuggestions); a slow client holds the handler back through `drain`. A
 * stream that can push (`Pushable`: every Watch) is written to as its messages come, in
 * the turn that makes them, so one change reaches every watcher of a chat in one loop
 * (server/store/push-source.ts); any other is read with `for await`. Pinned by
 * test/transport/grpc-server-stream.test.ts, test/e2e/slow-watcher.test.ts and the Watch
 * tests through gRPC clients (test/e2e/interop-grpc.test.ts, test/e2e/deadlines.test.ts).
 */
export async function serveServerStream(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  route: ServerStreamRoute,
  options: OpenCallOptions & {
    readonly responseHeaders?: Readonly<Record<string, string | number>>;
  },
  body: Buffer,
): Promise<void> {
  const answer = new StreamAnswer(stream, route.method, options.responseHeaders);
  try {
    const { input, context } = openCall(stream, headers, route, options, body);
    answer.context = context;
    const messages = route.fn(input, context);
    const pushable = pushableOf(messages);
    if (pushable !== undefined && pushed(pushable, answer)) return;
    for await (const message of messages) {
      if (answer.gone) break;
      if (!answer.send(message)) await answer.drained();
    }
    answer.finish(GRPC_OK);
  } catch (err) {
    answer.fail(err);
  }
}

/**
 * Hands `pushable`'s messages to `answer` as they come, pausing it while the stream
 * drains, and ends the call with its end; false when it cannot push (read it then). The
 * stream may push or end within `pushTo`, before its steering is known: what it asks
 * then is done once `pushTo` has answered.
 */
function pushed(pushable: Pushable, answer: StreamAnswer): boolean {
  let steering: { resume(): void; stop(): void } | undefined;
  let asked: "resume" | "stop" | undefined;
  const ask = (what: "resume" | "stop") => {
    if (steering === undefined) asked = what;
    else steering[what]();
  };
  steering = pushable.pushTo({
    // Called within the hub's loop over a chat's watchers: it never throws. A message that
    // cannot be written ends this call alone, as a throw in the `for await` below does.
    push: (message) => {
      // A push after the call's end (its stop asked within `pushTo`, not done yet): dropped.
      if (answer.finished) return false;
      try {
        if (answer.gone) {
          ask("stop");
          answer.finish(GRPC_OK);
          return false;
        }
        if (answer.send(message)) return true;
        void answer.drained().then(() => ask("resume"));
      } catch (err) {
        ask("stop");
        answer.fail(err);
      }
      return false;
    },
    end: (error) => (error === undefined ? answer.finish(GRPC_OK) : answer.fail(error)),
  });
  if (steering === undefined) return false;
  if (asked !== undefined) steering[asked]();
  return true;
}

/** A server stream's answer: headers with the first message, then frames, then trailers. */
class StreamAnswer {
  readonly #stream: ServerHttp2Stream;
  readonly #method: DescMethod;
  #started = false;
  #finished = false;
  /** The call's context, told when the call has answered (`LazyContext.ended`). */
  context: LazyContext | undefined;

  readonly #headers: Readonly<Record<string, string | number>>;

  constructor(
    stream: ServerHttp2Stream,
    method: DescMethod,
    headers: Readonly<Record<string, string | number>> = GRPC_RESPONSE_HEADERS,
  ) {
    this.#headers = headers;
    this.#stream = stream;
    this.#method = method;
  }

  /** The call has ended (`finish`): nothing more is written. */
  get finished(): boolean {
    return this.#finished;
  }

  /** The client's stream is closed: nothing more can be written. */
  get gone(): boolean {
    return this.#stream.destroyed || this.#stream.closed;
  }

  /** Writes one message; false when the stream must drain first. */
  send(message: unknown): boolean {
    if (!this.#started) {
      this.#started = true;
      this.#stream.respond(this.#headers, { waitForTrailers: true });
    }
    return this.#stream.write(frameOf(this.#method.output, message));
  }

  /** Resolves when the stream can take more, or is gone. */
  drained(): Promise<void> {
    const stream = this.#stream;
    return new Promise((resolve) => {
      const done = () => {
        stream.off("drain", done);
        stream.off("close", done);
        resolve();
      };
      stream.on("drain", done);
      stream.on("close", done);
    });
  }

  /**
   * Ends the call with `status`: in trailers after messages, else trailers-only. Once, and
   * without throwing (a pushed stream ends it from listeners and loops that cannot take a
   * throw): a stream that cannot take the status is reset.
   */
  finish(status: Readonly<Record<string, string>>): void {
    if (this.#finished) return;
    this.#finished = true;
    this.context?.ended();
    const stream = this.#stream;
    if (this.gone) return;
    try {
      if (!this.#started) {
        stream.respond({ ...this.#headers, ...status }, { endStream: true });
        return;
      }
      stream.once("wantTrailers", () => stream.sendTrailers(status));
      stream.end();
    } catch {
      stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    }
  }

  /** Ends the call with the error's status. */
  fail(err: unknown): void {
    this.finish(statusOf(toConnectError(err)));
  }
}
