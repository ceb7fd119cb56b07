import type { ServiceImpl } from "@connectrpc/connect";
import type { ChatHostService, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import type { EmbeddedChatHost } from "../host/embedded-host.js";
import { dependencyError } from "./errors.js";

/** What a failure of the embedded host's Redis is called in the answer. */
const EMBEDDED_REDIS = "the embedded chat host's Redis";

/** Runs one host call; a failure of its Redis answers UNAVAILABLE (rpc/errors.ts). */
async function hostCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw dependencyError(err, EMBEDDED_REDIS);
  }
}

/** The embedded host's `ChatHostService`, served so that remote callers can use it too. */
export function createChatHostService(host: EmbeddedChatHost): ServiceImpl<typeof ChatHostService> {
  return {
    getSession: (request) => hostCall(() => host.getSession(request)),
    createChat: (request) => hostCall(() => host.createChat(request)),
    postMessage: (request) => hostCall(() => host.postMessage(request)),
  };
}

/** The embedded host's administration: sessions, chats and goals. */
export function createLocalHostService(
  host: EmbeddedChatHost,
): ServiceImpl<typeof LocalHostService> {
  return {
    putSession: (request) => hostCall(() => host.putSession(request.session)),
    getChat: (request) => hostCall(() => host.getChat(request.chatId)),
    createGoal: (request) => hostCall(() => host.createGoal(request.chatId, request.messageId)),
  };
}
