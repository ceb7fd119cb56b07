import { connect, type TLSSocket } from "node:tls";
import { AbstractConnector, type StandaloneConnectionOptions } from "ioredis";

/**
 * How ioredis opens a TLS connection to one Redis (its `Connector` option), as its own
 * standalone connector does, with one difference: the socket keeps an error listener for
 * its whole life. ioredis listens to a socket's errors with `once`, and a TLS socket may
 * emit a second one: Redis's alert that follows a certificate the service refused, when
 * the connection is closed during the handshake (a start that stops on that refusal, a
 * shutdown during such an outage). With no listener left, that second error would end
 * the process. The first still reaches ioredis as before (its `error` event, the outage
 * log); a later one is dropped here, the connection being over by then.
 */
export class TlsConnector extends AbstractConnector {
  readonly #options: StandaloneConnectionOptions;

  /** `options`: the client's, which ioredis hands every connector it is given. */
  constructor(options: unknown) {
    const standalone = options as StandaloneConnectionOptions;
    super(standalone.disconnectTimeout ?? 2_000);
    this.#options = standalone;
  }

  connect(): Promise<TLSSocket> {
    this.connecting = true;
    const { host, port, family, tls } = this.#options;
    return new Promise((resolve, reject) => {
      // On the next tick, as ioredis's connector: a disconnect() made meanwhile wins.
      process.nextTick(() => {
        if (!this.connecting) {
          reject(new Error("Connection is closed."));
          return;
        }
        let stream: TLSSocket;
        try {
          stream = connect({
            ...(host === undefined ? {} : { host }),
            ...(port === undefined ? {} : { port }),
            ...(family === undefined ? {} : { family }),
            ...tls,
          });
        } catch (err) {
          reject(err);
          return;
        }
        stream.on("error", (err) => {
          this.firstError ??= err;
        });
        this.stream = stream;
        resolve(stream);
      });
    });
  }
}
