import type { ConnectRouter } from "@connectrpc/connect";
import { ChatHostService, LocalHostService } from "../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { EmbeddedChatHost } from "./embedded-host.js";
import { createChatHostService, createLocalHostService } from "./host-service.js";
import { createSuggestionService, type SuggestionServiceDeps } from "./suggestion-service.js";

/** What the routes are built from. */
export interface RoutesDeps extends SuggestionServiceDeps {
  /** The embedded host, served too when present (no `CHAT_HOST_URL`). */
  readonly embeddedHost?: EmbeddedChatHost | undefined;
}

/** Builds the service's routes from injected dependencies; nothing here listens. */
export function createRoutes(deps: RoutesDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(SuggestionService, createSuggestionService(deps));
    if (deps.embeddedHost !== undefined) {
      router.service(ChatHostService, createChatHostService(deps.embeddedHost));
      router.service(LocalHostService, createLocalHostService(deps.embeddedHost));
    }
  };
}
