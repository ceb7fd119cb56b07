/**
 * `@oda/suggest-task/node`: the SDK for Node.js. Everything the core entry exports, and client
 * factories that also take a `baseUrl`, for which they make a `@connectrpc/connect-node`
 * transport: gRPC over HTTP/2 by default (h2c for `http:` URLs), or Connect or gRPC-Web over
 * HTTP/2 or HTTP/1.1.
 *
 * ```ts
 * import { createSuggestionClient } from "@oda/suggest-task/node";
 * const client = createSuggestionClient({ baseUrl: "http://127.0.0.1:8080", token });
 * ```
 *
 * @packageDocumentation
 */

import type { Interceptor, Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  type Http2SessionOptions,
} from "@connectrpc/connect-node";
import {
  type ChatHostClient,
  createChatHostClient as coreChatHostClient,
  createLocalHostClient as coreLocalHostClient,
  createSuggestionClient as coreSuggestionClient,
  type LocalHostClient,
  type PlatformClientOptions,
  type SuggestionClient,
} from "./clients.js";
import { type ClientOptions, withTransport } from "./transport.js";
import { SDK_VERSION } from "./version.js";

export * from "./index.js";

/** The three protocols the service serves on one port. */
export type Protocol = "grpc" | "connect" | "grpc-web";

/**
 * The HTTP/2 keepalive of the Node entry's transports unless `http2` says otherwise: a PING
 * after 30 s without a frame on a connection that has calls open (a watch), dropped and
 * re-made when none answers within 10 s, so a connection a proxy or a NAT forgot in silence
 * is noticed (and the watch reconnects) within 40 s; an idle connection closes after 5 min.
 */
export const DEFAULT_HTTP2_SESSION_OPTIONS: Readonly<Http2SessionOptions> = Object.freeze({
  pingIntervalMs: 30_000,
  pingTimeoutMs: 10_000,
  idleConnectionTimeoutMs: 300_000,
});

/** The deadline of the Node entry's unary calls that set none: 30 s, retries included. */
export const DEFAULT_NODE_TIMEOUT_MS = 30_000;

/** The `user-agent` the Node entry's transports send: the SDK, its version, connect-es. */
export const NODE_USER_AGENT = `oda-suggest-task-node/${SDK_VERSION}`;

/** How to reach a server by URL from Node.js. */
export type NodeTransportOptions = {
  /** The server's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  readonly transport?: never;
  /** HTTP/2 keepalive and idle settings over `DEFAULT_HTTP2_SESSION_OPTIONS`. */
  readonly http2?: Http2SessionOptions | undefined;
} & (
  | {
      /** gRPC (the default), which runs on HTTP/2 only (h2c for `http:` URLs). */
      readonly protocol?: "grpc" | undefined;
      readonly httpVersion?: "2" | undefined;
    }
  | {
      /** Connect or gRPC-Web, over HTTP/2 (the default) or HTTP/1.1. */
      readonly protocol: Exclude<Protocol, "grpc">;
      readonly httpVersion?: "1.1" | "2" | undefined;
    }
);

/** What the Node entry's clients take: a `baseUrl` with its protocol, or any transport. */
export type NodeClientOptions = PlatformClientOptions<NodeTransportOptions>;

/**
 * The `@connectrpc/connect-node` transport for `options`: gRPC (HTTP/2) unless `protocol`
 * says Connect or gRPC-Web, which may also run on HTTP/1.1.
 */
export function createNodeTransport(options: NodeTransportOptions): Transport {
  const { baseUrl } = options;
  const h2 = { ...DEFAULT_HTTP2_SESSION_OPTIONS, ...options.http2 };
  if (options.protocol === "connect") {
    return options.httpVersion === "1.1"
      ? createConnectTransport({ baseUrl, httpVersion: "1.1" })
      : createConnectTransport({ baseUrl, httpVersion: "2", ...h2 });
  }
  if (options.protocol === "grpc-web") {
    return options.httpVersion === "1.1"
      ? createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })
      : createGrpcWebTransport({ baseUrl, httpVersion: "2", ...h2 });
  }
  return createGrpcTransport({ baseUrl, ...h2 });
}

/**
 * Names the SDK in `user-agent` unless the caller set one; connect-es keeps a caller's (for
 * gRPC-Web it copies it to `x-user-agent`) and writes its own `connect-es/2.1.2` otherwise.
 */
const userAgent: Interceptor = (next) => (req) => {
  if (!req.header.has("user-agent")) req.header.set("user-agent", NODE_USER_AGENT);
  return next(req);
};

/**
 * The core's options for the Node entry's: the transport for a `baseUrl`, which names the
 * SDK in `user-agent`, and the default unary deadline.
 */
function nodeOptions(options: NodeClientOptions): ClientOptions {
  const core = withTransport(options, createNodeTransport);
  const named =
    options.transport === undefined
      ? { ...core, interceptors: [userAgent, ...(core.interceptors ?? [])] }
      : core;
  return named.defaultTimeoutMs === undefined
    ? { ...named, defaultTimeoutMs: DEFAULT_NODE_TIMEOUT_MS }
    : named;
}

const clients = {
  createSuggestionClient: (options: NodeClientOptions) =>
    coreSuggestionClient(nodeOptions(options)),
  createChatHostClient: (options: NodeClientOptions) => coreChatHostClient(nodeOptions(options)),
  createLocalHostClient: (options: NodeClientOptions) => coreLocalHostClient(nodeOptions(options)),
};

/**
 * A client of `SuggestionService` (the core's `createSuggestionClient`), for a `baseUrl`
 * over `createNodeTransport` or for a given `transport`; typed errors, `token` as bearer.
 */
export const createSuggestionClient: (options: NodeClientOptions) => SuggestionClient =
  clients.createSuggestionClient;

/** A client of a chat host's `ChatHostService`, with the options of `createSuggestionClient`. */
export const createChatHostClient: (options: NodeClientOptions) => ChatHostClient =
  clients.createChatHostClient;

/** A client of the embedded host's `LocalHostService`, with the same options. */
export const createLocalHostClient: (options: NodeClientOptions) => LocalHostClient =
  clients.createLocalHostClient;
