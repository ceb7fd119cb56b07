import { constants, type Http2Session, type ServerHttp2Stream } from "node:http2";

/** How long a probe's ping may go unanswered before the session is taken as done, in ms. */
export const PROBE_MS = 2_000;

/**
 * Closes an HTTP/2 session that has stopped reading, so that its socket goes when the
 * client's does. Node's HTTP/2 layer sends a GOAWAY of its own when a client resets too
 * many streams (its limit on reset streams, about a thousand at once), and from then on
 * reads nothing more once no stream is open: the client closes the connection, and
 * nobody notices, the socket left in CLOSE-WAIT with its file descriptor. JavaScript is
 * told of no such GOAWAY, so it is found out: once streams have been reset and none is
 * open, the session is pinged; a ping unanswered within PROBE_MS (a session that reads
 * answers within a round trip) closes the session, which reads to the end again and
 * destroys the socket as soon as the client has closed it. A session that answers, or
 * that opens a stream meanwhile, is left alone. One ping at most is out at a time.
 * Pinned by test/transport/reset-probe.test.ts and test/e2e/socket-close.test.ts.
 */
export function probeAfterResets(session: Http2Session): void {
  let open = 0;
  let resets = false;
  let probing = false;
  const idle = () => open === 0 && !session.closed && !session.destroyed;
  const probe = () => {
    if (probing || !resets || !idle()) return;
    probing = true;
    resets = false;
    const timer = setTimeout(() => {
      probing = false;
      if (idle()) session.close();
    }, PROBE_MS);
    timer.unref();
    const answered = (err: Error | null) => {
      clearTimeout(timer);
      probing = false;
      if (err !== null && idle()) session.close();
      else probe();
    };
    try {
      session.ping(answered);
    } catch (err) {
      answered(err as Error);
    }
  };
  session.on("stream", (stream: ServerHttp2Stream) => {
    open++;
    stream.once("close", () => {
      open--;
      if (stream.rstCode !== undefined && stream.rstCode !== constants.NGHTTP2_NO_ERROR) {
        resets = true;
      }
      probe();
    });
  });
}
