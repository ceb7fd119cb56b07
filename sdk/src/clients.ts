import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { ChatHostService, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { typedErrorsInterceptor } from "./errors.js";
import {
  type CallerOptions,
  type ClientOptions,
  clientTransport,
  withTransport,
} from "./transport.js";

/** A typed client of `SuggestionService`: one promise-returning method per RPC. */
export type SuggestionClient = Client<typeof SuggestionService>;

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
 *
 * ```ts
 * const transport = createConnectTransport({ baseUrl: "https://suggest.example" });
 * const client = createSuggestionClient({ transport, token });
 * const { open, settled } = await client.listSuggestions({ sessionId });
 * ```
 */
export function createSuggestionClient(options: ClientOptions): SuggestionClient {
  return createClient(SuggestionService, clientTransport(options, [typedErrorsInterceptor]));
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
