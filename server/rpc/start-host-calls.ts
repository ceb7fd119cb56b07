import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type CreateChatRequestSchema,
  MessageAuthor,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { isValidId } from "../domain/ids.js";
import { startIdempotencyKeys } from "../domain/started-chat.js";
import type { ChatHost } from "../host/chat-host.js";
import { hostCall } from "./errors.js";

/*
 * A Start's calls of the chat host: the started chat's CreateChat and the brief's
 * PostMessage, each idempotent by its key (domain/started-chat.ts), so that however many
 * Starts of one suggestion make them, there is one chat with one brief.
 */

/**
 * The chat the host created for the request, its id checked; already handled, so that it
 * may fail while the step it feeds is still announcing (start-held.ts `startHeld`
 * awaits it again).
 */
export function createdChat(
  host: ChatHost,
  request: MessageInitShape<typeof CreateChatRequestSchema>,
): Promise<string> {
  const chat = hostCall(() => host.createChat(request)).then(({ chatId }) => {
    if (!isValidId(chatId)) {
      throw new ConnectError("the chat host answered an unusable chat id", Code.Internal);
    }
    return chatId;
  });
  chat.catch(() => {});
  return chat;
}

/**
 * The codes with which a host answers that it refused a request and changed nothing
 * (gRPC's "the request was rejected"): a CreateChat refused so made no chat. Anything
 * else (down, timed out, cancelled, aborted) may have created it.
 */
const REFUSED: ReadonlySet<Code> = new Set([
  Code.InvalidArgument,
  Code.FailedPrecondition,
  Code.OutOfRange,
  Code.PermissionDenied,
  Code.Unauthenticated,
  Code.NotFound,
  Code.AlreadyExists,
  Code.ResourceExhausted,
]);

/**
 * Whether `err` (a failure of `createdChat`) is the host's refusal of the chat, which
 * then does not exist; a dependency that is down (`hostCall` answers UNAVAILABLE) may
 * have created it before failing.
 */
export function refusedChat(err: unknown): boolean {
  return err instanceof ConnectError && REFUSED.has(err.code);
}

/**
 * Posts the brief as the new chat's message, attributed to the suggestion (author
 * SUGGESTION, origin the offering session and suggestion) so that person-only checks
 * refuse it. Idempotent by key: however many Starts post it, the chat has it once.
 */
export async function postBrief(
  host: ChatHost,
  suggestion: Suggestion,
  chatId: string,
): Promise<void> {
  await hostCall(() => host.postMessage(briefRequest(suggestion, chatId)));
}

/**
 * The brief's PostMessage request for a suggestion's chat: the person's edit when there
 * is one (`edit`; by default the one the started suggestion was started with), marked
 * edited, else the offer's brief. Either way its author is SUGGESTION: an edited offer is
 * still not the person's own instruction.
 */
function briefRequest(
  suggestion: Suggestion,
  chatId: string,
  edit = suggestion.startOptions?.brief ?? "",
) {
  const { sessionId, id: suggestionId } = suggestion;
  return {
    idempotencyKey: startIdempotencyKeys(sessionId, suggestionId).brief,
    chatId,
    text: edit !== "" ? edit : suggestion.brief,
    author: MessageAuthor.SUGGESTION,
    origin: { sessionId, suggestionId },
    edited: edit !== "",
  };
}
