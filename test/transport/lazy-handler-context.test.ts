import { getEventListeners } from "node:events";
import http2, { type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, test } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import type { CallEnd } from "../../server/rpc/call-end.js";
import { LazyContext } from "../../server/transport/lazy-handler-context.js";

/*
 * The fast path's handler context (server/transport/lazy-handler-context.ts), on real
 * HTTP/2 streams: its signal aborts while the call runs (the client leaving, the
 * deadline), and `ended` leaves nothing behind once the call has answered: no abort, no
 * listener on the server's shutdown signal or the stream, no timer.
 */

const route = { service: Health, method: Health.method.check };
let server: http2.Http2Server;
let client: http2.ClientHttp2Session;
const arrived: ServerHttp2Stream[] = [];
const waiting: ((stream: ServerHttp2Stream) => void)[] = [];

beforeAll(async () => {
  server = http2.createServer();
  server.on("stream", (stream) => {
    const next = waiting.shift();
    if (next) next(stream);
    else arrived.push(stream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  client = http2.connect(`http://127.0.0.1:${port}`);
  await new Promise((resolve) => client.once("connect", resolve));
});
afterAll(async () => {
  client.close();
  await new Promise((resolve) => server.close(resolve));
});

/** A new stream, as the server sees it, and a way to close it from the client. */
async function streamPair() {
  const request = client.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check" });
  request.on("error", () => {});
  request.resume();
  const stream =
    arrived.shift() ??
    (await new Promise<ServerHttp2Stream>((resolve) => {
      waiting.push(resolve);
    }));
  const closed = new Promise((resolve) => stream.once("close", resolve));
  return { stream, leave: () => request.close(), closed };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("while the call runs, the client leaving aborts the signal with CANCELED", async () => {
  const shutdown = new AbortController();
  const { stream, leave, closed } = await streamPair();
  const context = new LazyContext(stream, {}, route, { shutdownSignal: shutdown.signal }, 60_000);
  const signal = context.signal;
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(1);
  leave();
  await closed;
  expect(signal.aborted).toBe(true);
  expect(signal.reason).toBeInstanceOf(ConnectError);
  expect((signal.reason as ConnectError).code).toBe(Code.Canceled);
  expect((signal.reason as ConnectError).rawMessage).toBe("the client left");
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
});

test("while the call runs, the deadline aborts the signal with DEADLINE_EXCEEDED", async () => {
  const shutdown = new AbortController();
  const { stream, leave, closed } = await streamPair();
  const context = new LazyContext(stream, {}, route, { shutdownSignal: shutdown.signal }, 20);
  const signal = context.signal;
  await sleep(60);
  expect((signal.reason as ConnectError).code).toBe(Code.DeadlineExceeded);
  leave();
  await closed;
});

test("once the call has answered, `ended` leaves no abort, listener or timer behind", async () => {
  const shutdown = new AbortController();
  const { stream, leave, closed } = await streamPair();
  const closeListeners = stream.listenerCount("close");
  const context = new LazyContext(stream, {}, route, { shutdownSignal: shutdown.signal }, 20);
  const signal = context.signal;
  try {
    expect(stream.listenerCount("close")).toBe(closeListeners + 1);
    context.ended();
    expect(stream.listenerCount("close")).toBe(closeListeners);
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
    await sleep(60); // past the deadline: its timer was cleared
  } finally {
    leave();
    await closed;
  }
  shutdown.abort();
  expect(signal.aborted).toBe(false);
});

test("a context whose signal was never read makes none, and `ended` is harmless", async () => {
  const shutdown = new AbortController();
  const { stream, leave, closed } = await streamPair();
  const context = new LazyContext(stream, {}, route, { shutdownSignal: shutdown.signal }, 20);
  context.ended();
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  leave();
  await closed;
});

/** `onEnd`'s listener, and the reasons it was told. */
function endListener() {
  const reasons: ConnectError[] = [];
  return { reasons, listener: (reason: unknown) => reasons.push(reason as ConnectError) };
}

test("onEnd tells the client leaving (CANCELED) and the deadline once each, with no signal", async () => {
  const shutdown = new AbortController();
  const leaving = await streamPair();
  const context: CallEnd = new LazyContext(
    leaving.stream,
    {},
    route,
    { shutdownSignal: shutdown.signal },
    60_000,
  );
  const left = endListener();
  const other = endListener();
  context.onEnd(left.listener);
  context.onEnd(other.listener);
  // A listener each on the shutdown: a signal, made once, would have one for both.
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(2);
  leaving.leave();
  await leaving.closed;
  for (const told of [left, other]) {
    expect(told.reasons.map((r) => [r.code, r.rawMessage])).toEqual([
      [Code.Canceled, "the client left"],
    ]);
  }
  // Told, so dropped: neither the shutdown nor the deadline tells them again.
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  shutdown.abort(new ConnectError("the server is shutting down", Code.Unavailable));
  expect(left.reasons).toHaveLength(1);

  const staying = await streamPair();
  const timed = new LazyContext(
    staying.stream,
    {},
    route,
    { shutdownSignal: new AbortController().signal },
    20,
  );
  const late = endListener();
  timed.onEnd(late.listener);
  await sleep(60);
  // A call past its deadline tells a new listener at once.
  const after = endListener();
  timed.onEnd(after.listener);
  staying.leave();
  await staying.closed;
  expect(late.reasons.map((r) => [r.code, r.rawMessage])).toEqual([
    [Code.DeadlineExceeded, "the operation timed out"],
  ]);
  expect(after.reasons.map((r) => r.code)).toEqual([Code.DeadlineExceeded]);
});

test("onEnd tells the shutdown's reason; a drop, or the call's answer, drops listeners and timer", async () => {
  const shutdown = new AbortController();
  const { stream, leave, closed } = await streamPair();
  const context = new LazyContext(stream, {}, route, { shutdownSignal: shutdown.signal }, 30);
  const dropped = endListener();
  const drop = context.onEnd(dropped.listener);
  const told = endListener();
  context.onEnd(told.listener);
  drop();
  expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(1);
  const reason = new ConnectError("the server is shutting down", Code.Unavailable);
  shutdown.abort(reason);
  expect(told.reasons).toEqual([reason]);
  await sleep(60);
  // The dropped listener heard nothing, nor did the told one twice (deadline, stream).
  expect(dropped.reasons).toEqual([]);
  expect(told.reasons).toHaveLength(1);

  // Once the call has answered (`ended`), nothing of its listeners is left to tell.
  const shutdownLater = new AbortController();
  const answered = await streamPair();
  const ending = new LazyContext(
    answered.stream,
    {},
    route,
    { shutdownSignal: shutdownLater.signal },
    30,
  );
  const unheard = endListener();
  ending.onEnd(unheard.listener);
  const closeListeners = answered.stream.listenerCount("close");
  ending.ended();
  expect(getEventListeners(shutdownLater.signal, "abort")).toHaveLength(0);
  expect(answered.stream.listenerCount("close")).toBe(closeListeners - 1);
  await sleep(60);
  answered.leave();
  await answered.closed;
  shutdownLater.abort();
  expect(unheard.reasons).toEqual([]);
  leave();
  await closed;
});
