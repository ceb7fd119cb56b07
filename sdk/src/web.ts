/**
 * `@oda/suggest-task/web`: the SDK for browsers and fetch-based runtimes (edge functions,
 * Deno, Bun, Node.js's own fetch). Everything the core entry exports, and client factories
 * that also take a `baseUrl`, for which they make a `@connectrpc/connect-web` transport: the
 * Connect protocol over `fetch` by default (unary and server-streaming calls, HTTP/1.1 or
 * whatever the runtime's fetch speaks), or gRPC-Web. Nothing here imports a `node:` module.
 *
 * ```ts
 * import { createSuggestionClient } from "@oda/suggest-task/web";
 * const client = createSuggestionClient({ baseUrl: location.origin, token });
 * ```
 *
 * @packageDocumentation
 */

import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  type ChatHostClient,
  type LocalHostClient,
  type PlatformClientOptions,
  platformClients,
  type SuggestionClient,
} from "./clients.js";

export * from "./index.js";

/** How to reach a server by URL over `fetch`. */
export interface WebTransportOptions {
  /** The server's base URL, e.g. `https://suggest.example` or the page's `location.origin`. */
  readonly baseUrl: string;
  readonly transport?: never;
  /** Connect (the default) or gRPC-Web; both run over HTTP/1.1. */
  readonly protocol?: "connect" | "grpc-web" | undefined;
  /** Binary protobuf rather than JSON, for Connect (gRPC-Web is always binary). */
  readonly useBinaryFormat?: boolean | undefined;
  /** The fetch to call through, e.g. an edge runtime's; the global `fetch` by default. */
  readonly fetch?: typeof globalThis.fetch | undefined;
}

/** What the web entry's clients take: a `baseUrl` with its options, or any transport. */
export type WebClientOptions = PlatformClientOptions<WebTransportOptions>;

/**
 * The `@connectrpc/connect-web` transport for `options`: Connect over `fetch` unless
 * `protocol` says gRPC-Web.
 */
export function createWebTransport(options: WebTransportOptions): Transport {
  const common = {
    baseUrl: options.baseUrl,
    ...(options.useBinaryFormat === undefined ? {} : { useBinaryFormat: options.useBinaryFormat }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  };
  return options.protocol === "grpc-web"
    ? createGrpcWebTransport(common)
    : createConnectTransport(common);
}

const clients = /*@__PURE__*/ platformClients(createWebTransport);

/**
 * A client of `SuggestionService` (the core's `createSuggestionClient`), for a `baseUrl`
 * over `createWebTransport` or for a given `transport`; typed errors, `token` as bearer.
 */
export const createSuggestionClient: (options: WebClientOptions) => SuggestionClient =
  clients.createSuggestionClient;

/** A client of a chat host's `ChatHostService`, with the options of `createSuggestionClient`. */
export const createChatHostClient: (options: WebClientOptions) => ChatHostClient =
  clients.createChatHostClient;

/** A client of the embedded host's `LocalHostService`, with the same options. */
export const createLocalHostClient: (options: WebClientOptions) => LocalHostClient =
  clients.createLocalHostClient;
