import { type Client, createClient } from "@connectrpc/connect";
import { ChatHostService, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { typedErrorsInterceptor } from "./errors.js";
import { type ClientOptions, clientTransport } from "./transport.js";

/** A typed client of `SuggestionService`: one promise-returning method per RPC. */
export type SuggestionClient = Client<typeof SuggestionService>;

/** A typed client of a chat host's `ChatHostService`. */
export type ChatHostClient = Client<typeof ChatHostService>;

/** A typed client of the embedded host's `LocalHostService`. */
export type LocalHostClient = Client<typeof LocalHostService>;

/**
 * A client of `SuggestionService`, made with `createClient` over the transport `options`
 * describe (a `baseUrl` and `protocol`, or a `transport` of the caller's), sending `token` as
 * `authorization: Bearer <token>`. Failures carrying the service's details are thrown as the
 * SDK's typed errors (`SuggestionNotFoundError`, ..., `SuggestTaskRefusalError`), also when
 * they end a `watchSuggestions` stream; any other error is a plain `ConnectError`.
 *
 * ```ts
 * const client = createSuggestionClient({ baseUrl: "http://127.0.0.1:8080" });
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
