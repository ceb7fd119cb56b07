import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import type { UniversalHandlerOptions } from "@connectrpc/connect/protocol";
import { ChatHostService, MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";

/**
 * A chat host's implementation of `ChatHostService`: all three RPCs are required, so the
 * compiler tells a host what it still lacks. Each answers a response message or its init
 * shape. The contract a host keeps (docs/contract.md, ChatHostService):
 * - `getSession`: NOT_FOUND (`new ConnectError(..., Code.NotFound)`) for an unknown session;
 *   the service then refuses the tool call as having no owning session.
 * - `createChat`: the same `idempotencyKey` always answers the same chat.
 * - `postMessage`: the same `idempotencyKey` posts once; a message whose `author` is
 *   SUGGESTION is not the person's instruction (`isPersonInstruction`).
 */
export type ChatHostImpl = ServiceImpl<typeof ChatHostService>;

/**
 * Routes that serve a TypeScript host's `ChatHostService` implementation, for
 * `connectNodeAdapter({ routes })`, `fastify`/`express` Connect plugins or
 * `createRouterTransport`. Point the service's `CHAT_HOST_URL` at the server: the service
 * calls it over gRPC, so serve it on HTTP/2 (h2c for `http:`).
 *
 * ```ts
 * http2.createServer(connectNodeAdapter({ routes: chatHostRoutes(myHost) })).listen(9090);
 * ```
 */
export function chatHostRoutes(
  impl: ChatHostImpl,
  options?: Partial<UniversalHandlerOptions>,
): (router: ConnectRouter) => void {
  return (router) => {
    router.service(ChatHostService, impl, options);
  };
}

/**
 * True only for a message the person wrote (author PERSON). A suggestion's brief is posted
 * with author SUGGESTION: it is attributed to the suggestion, not the person, so checks that
 * need a person's own instruction (creating or completing a goal) must not accept it, and
 * this answers false for it, as for the agent's messages and an unset author.
 */
export function isPersonInstruction(message: { readonly author: MessageAuthor }): boolean {
  return message.author === MessageAuthor.PERSON;
}
