import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { ChatHostService, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  SuggestionService,
  type WatchSuggestionsRequestSchema,
  type WatchSuggestionsResponse,
  type WatchWorkspaceSuggestionsRequestSchema,
  type WatchWorkspaceSuggestionsResponse,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { typedErrorsInterceptor } from "./errors.js";
import {
  type CallerOptions,
  type ClientOptions,
  clientTransport,
  withTransport,
} from "./transport.js";
import { survivingWatch, type WatchCallOptions } from "./watch.js";

/**
 * A typed client of `SuggestionService`: one promise-returning method per RPC, and the two
 * watches as async iterables that survive restarts, drains and proxies (`WatchPolicy`).
 */
export type SuggestionClient = Omit<
  Client<typeof SuggestionService>,
  "watchSuggestions" | "watchWorkspaceSuggestions"
> & {
  /**
   * The chat's lists at once, then after every change; on the client's defaults it
   * reconnects after any end that was not the caller's and hides heartbeats (`WatchPolicy`);
   * `{ raw: true }` gives the server's stream as it is. Leaving the loop ends the call.
   */
  watchSuggestions(
    request: MessageInitShape<typeof WatchSuggestionsRequestSchema>,
    options?: WatchCallOptions,
  ): AsyncIterable<WatchSuggestionsResponse>;
  /** The workspace's first page at once, then after every change; as `watchSuggestions`. */
  watchWorkspaceSuggestions(
    request: MessageInitShape<typeof WatchWorkspaceSuggestionsRequestSchema>,
    options?: WatchCallOptions,
  ): AsyncIterable<WatchWorkspaceSuggestionsResponse>;
};

/** A typed client of a chat host's `ChatHostService`. */
export type ChatHostClient = Client<typeof ChatHostService>;

/** A typed client of the embedded host's `LocalHostService`. */
export type LocalHostClient = Client<typeof LocalHostService>;

/**
 * A client of `SuggestionService`, made with `createClient` over the caller's `transport`
 * (any protocol, any runtime), sending `token` as
 * `authorization: Bearer <token>`. Failures carrying the service's details are thrown as the
 * SDK's typed errors (`SuggestionNotFoundError`, ..., `SuggestTaskRefusalError`), also when
 * they end a `watchSuggestions` stream; any other error is a plain `ConnectError`.
 * Retry-safe unary calls are retried after a failure a restart or a proxy causes (`retry`,
 * `retryInterceptor`), and the watches reconnect (`watch`, `WatchPolicy`).
 *
 * ```ts
 * const transport = createConnectTransport({ baseUrl: "https://suggest.example" });
 * const client = createSuggestionClient({ transport, token });
 * const { open, settled } = await client.listSuggestions({ sessionId });
 * ```
 */
export function createSuggestionClient(options: ClientOptions): SuggestionClient {
  const client = createClient(
    SuggestionService,
    clientTransport(options, [typedErrorsInterceptor]),
  );
  const { method } = SuggestionService;
  return Object.assign(client, {
    watchSuggestions: survivingWatch(
      client.watchSuggestions,
      method.watchSuggestions.output,
      options.watch,
    ),
    watchWorkspaceSuggestions: survivingWatch(
      client.watchWorkspaceSuggestions,
      method.watchWorkspaceSuggestions.output,
      options.watch,
    ),
  });
}

/**
 * A client of a chat host's `ChatHostService` (the embedded host on the service's own port,
 * or any remote host), with the same options as `createSuggestionClient`. Host errors are
 * plain `ConnectError`s (NOT_FOUND for an unknown session).
 */
export function createChatHostClient(options: ClientOptions): ChatHostClient {
  return createClient(ChatHostService, clientTransport(options));
}

/**
 * A client of the embedded host's `LocalHostService` (PutSession, GetChat, CreateGoal),
 * served on the service's port when no remote chat host is configured.
 */
export function createLocalHostClient(options: ClientOptions): LocalHostClient {
  return createClient(LocalHostService, clientTransport(options));
}

/** The options of a platform entry's clients: a URL its transport is made for, or a transport. */
export type PlatformClientOptions<U> = (U & CallerOptions) | ClientOptions;

/**
 * The three client factories of a platform entry (`@oda/suggest-task/node`, `/web`): the
 * core's, taking a `baseUrl` (and the entry's protocol options) too, for which `make` builds
 * the platform's transport. The token and interceptors wrap that transport as they wrap a
 * given one, so the clients behave the same on every platform.
 */
export function platformClients<U extends { readonly baseUrl: string; readonly transport?: never }>(
  make: (options: U) => Transport,
) {
  return {
    createSuggestionClient: (options: PlatformClientOptions<U>): SuggestionClient =>
      createSuggestionClient(withTransport(options, make)),
    createChatHostClient: (options: PlatformClientOptions<U>): ChatHostClient =>
      createChatHostClient(withTransport(options, make)),
    createLocalHostClient: (options: PlatformClientOptions<U>): LocalHostClient =>
      createLocalHostClient(withTransport(options, make)),
  };
}
