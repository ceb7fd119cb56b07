import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";

/*
 * The embedded host's refusals of what it does not know or will not do, with their exact
 * texts: the tenant rule (rpc/host-tenant-guard.ts) answers some of them byte for byte.
 */

/**
 * The answer for a session the host does not know: NOT_FOUND `no session "<id>"`. The
 * tenant rule answers a session of a workspace not granted with it too, byte for byte.
 */
export function noSession(sessionId: string): ConnectError {
  return new ConnectError(`no session "${sessionId}"`, Code.NotFound);
}

/**
 * The answer for a chat the host knows neither as a chat nor as a session: NOT_FOUND
 * `no chat "<id>"`. The tenant rule answers a chat of a workspace not granted with it too.
 */
export function noChat(chatId: string): ConnectError {
  return new ConnectError(`no chat "${chatId}"`, Code.NotFound);
}

/** The answer for a message the chat does not hold: NOT_FOUND, for CreateGoal. */
export function noMessage(chatId: string, messageId: string): ConnectError {
  return new ConnectError(`no message "${messageId}" in chat "${chatId}"`, Code.NotFound);
}

/**
 * The answer to CreateGoal for a message that is not the person's own instruction (a
 * suggestion's brief, the agent's words): PERMISSION_DENIED with an ErrorInfo
 * `NOT_PERSONS_INSTRUCTION`, so that the started chat asks the person first.
 */
export function notPersonsInstruction(
  chatId: string,
  messageId: string,
  author: MessageAuthor,
): ConnectError {
  return new ConnectError(
    `message "${messageId}" is not the person's own instruction; ask the person first`,
    Code.PermissionDenied,
    undefined,
    [
      {
        desc: ErrorInfoSchema,
        value: {
          domain: "chat-host",
          reason: "NOT_PERSONS_INSTRUCTION",
          metadata: { chatId, messageId, author: MessageAuthor[author] },
        },
      },
    ],
  );
}
