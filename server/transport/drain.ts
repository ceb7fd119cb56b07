import { type Http2Session, constants as http2constants } from "node:http2";
import { Server as NetServer, type Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import type { OnePortServer } from "./one-port.js";

/** How a drain runs. */
export interface DrainOptions {
  /** The longest the drain waits for calls in flight, in ms. */
  readonly graceMs: number;
  /**
   * Called once clients have stopped opening streams and the sessions are closing: the
   * moment to end what runs until shutdown (watch streams), so their connections can go.
   */
  readonly onStreamsClosing: () => void;
}

/** The connections of one listening server, followed from the start, and their drain. */
export interface ConnectionDrain {
  /**
   * Stops accepting, lets calls in flight finish within the grace period, then closes
   * what is left; resolves when the listening socket is closed.
   */
  drain(options: DrainOptions): Promise<void>;
}

/** No new stream for this long: clients have acted on the first GOAWAY. */
const QUIET_MS = 100;

/** The highest stream id HTTP/2 allows: the first GOAWAY refuses no stream on its way. */
const LAST_STREAM_ID = 2 ** 31 - 1;

/**
 * Follows every TCP socket and HTTP/2 session of `server` (cleartext or TLS) so that a
 * shutdown can drain them. The drain sends two GOAWAYs, as RFC 9113 section 6.8
 * suggests: the first, naming the highest stream id, tells clients to open no more
 * streams here without refusing any that are already on the way; the second (the
 * session's close), once no stream has come for a while or half the grace is out,
 * closes each session when its streams in flight finish. A stream refused outright
 * would reach some clients as INTERNAL rather than UNAVAILABLE. A session that arrives
 * during the drain gets the notice too. The HTTP servers' own close() would end sessions
 * early, so only the listening socket is closed. Pinned by test/e2e/shutdown.test.ts.
 */
export function followConnections(server: OnePortServer): ConnectionDrain {
  const { tcp, h1, h2 } = server;
  const sessions = new Set<Http2Session>();
  const sockets = new Set<Socket>();
  let lastStreamAt = 0;
  let draining = false;
  const notice = (session: Http2Session) => {
    if (!session.closed) session.goaway(http2constants.NGHTTP2_NO_ERROR, LAST_STREAM_ID);
  };
  h2.on("stream", () => {
    lastStreamAt = Date.now();
  });
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    if (draining) notice(session);
    session.once("close", () => sessions.delete(session));
  });
  tcp.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  // HTTP/1.1 is served by its own server in cleartext, and over TLS by the TLS server's
  // fallback, which keeps node's list of HTTP/1.1 connections too: an idle keep-alive
  // connection closes at once, not at its 5 s timeout (test/e2e/tls-limits.test.ts).
  const h1Server = (h1 ?? h2) as { closeIdleConnections?: () => void };
  const closeIdleH1 = () => h1Server.closeIdleConnections?.();
  return {
    async drain({ graceMs, onStreamsClosing }) {
      const stopped = new Promise((resolve) => NetServer.prototype.close.call(tcp, resolve));
      closeIdleH1();
      draining = true;
      for (const session of sessions) notice(session);
      const quietBy = Date.now() + graceMs / 2;
      do await delay(25);
      while (Date.now() - lastStreamAt < QUIET_MS && Date.now() < quietBy);
      for (const session of sessions) session.close();
      onStreamsClosing();
      const deadline = Date.now() + graceMs;
      while (sockets.size > 0 && Date.now() < deadline) {
        closeIdleH1();
        await delay(25);
      }
      for (const socket of sockets) socket.destroy();
      for (const session of sessions) session.destroy();
      await stopped;
    },
  };
}
