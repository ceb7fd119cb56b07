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

import type { Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import {
  type ChatHostClient,
  type LocalHostClient,
  type PlatformClientOptions,
  platformClients,
  type SuggestionClient,
} from "./clients.js";

export * from "./index.js";

/** The three protocols the service serves on one port. */
export type Protocol = "grpc" | "connect" | "grpc-web";

/** How to reach a server by URL from Node.js. */
export type NodeTransportOptions = {
  /** The server's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  readonly transport?: never;
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
  if (options.protocol === "connect") {
    return options.httpVersion === "1.1"
      ? createConnectTransport({ baseUrl, httpVersion: "1.1" })
      : createConnectTransport({ baseUrl, httpVersion: "2" });
  }
  if (options.protocol === "grpc-web") {
    return options.httpVersion === "1.1"
      ? createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })
      : createGrpcWebTransport({ baseUrl, httpVersion: "2" });
  }
  return createGrpcTransport({ baseUrl });
}

const clients = /*@__PURE__*/ platformClients(createNodeTransport);

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
