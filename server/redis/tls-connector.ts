import type { Socket } from "node:net";
import { connect, type TLSSocket } from "node:tls";
import {
  AbstractConnector,
  type Redis,
  type RedisOptions,
  SentinelConnector,
  type StandaloneConnectionOptions,
} from "ioredis";

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

/**
 * ioredis's Sentinel connector as a base class, with the method that opens a client of
 * one sentinel, which ioredis declares private (ioredis is pinned in package-lock.json;
 * test/e2e/redis-tls.test.ts fails if the method stops being called).
 */
type SentinelConnectorWithClients = new (
  options: unknown,
) => AbstractConnector & {
  connect(
    ...args: Parameters<SentinelConnector["connect"]>
  ): ReturnType<SentinelConnector["connect"]>;
  connectToSentinel(endpoint: unknown, options?: Partial<RedisOptions>): Redis;
};

/**
 * How a client of `rediss+sentinel://` connects (its `Connector` option): ioredis's own
 * Sentinel connector, whose connections keep an error listener for their whole life as
 * `TlsConnector`'s do. The clients it opens to ask the sentinels for the primary are
 * opened with `TlsConnector` (they are closed as soon as the answer or its timeout
 * comes, during the handshake when a sentinel is slow); its connection to the primary
 * gets the lasting listener once opened (it is closed during the handshake when the
 * client is).
 */
export class SentinelTlsConnector extends (SentinelConnector as unknown as SentinelConnectorWithClients) {
  override async connect(
    ...args: Parameters<SentinelConnector["connect"]>
  ): ReturnType<SentinelConnector["connect"]> {
    const stream = await super.connect(...args);
    (stream as Socket).on("error", () => {});
    return stream;
  }

  override connectToSentinel(endpoint: unknown, options?: Partial<RedisOptions>): Redis {
    return super.connectToSentinel(endpoint, { ...options, Connector: TlsConnector });
  }
}
