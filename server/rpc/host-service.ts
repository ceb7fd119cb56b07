import type { ServiceImpl } from "@connectrpc/connect";
import type { ChatHostService, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import type { EmbeddedChatHost } from "../host/embedded-host.js";

/** The embedded host's `ChatHostService`, served so that remote callers can use it too. */
export function createChatHostService(host: EmbeddedChatHost): ServiceImpl<typeof ChatHostService> {
  return {
    getSession: (request) => host.getSession(request),
    createChat: (request) => host.createChat(request),
    postMessage: (request) => host.postMessage(request),
  };
}

/** The embedded host's administration: sessions, chats and goals. */
export function createLocalHostService(
  host: EmbeddedChatHost,
): ServiceImpl<typeof LocalHostService> {
  return {
    putSession: (request) => host.putSession(request.session),
    getChat: (request) => host.getChat(request.chatId),
    createGoal: (request) => host.createGoal(request.chatId, request.messageId),
  };
}
