import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ChatMessageSchema,
  ChatSchema,
  ChatSettingsSchema,
  CreateChatRequestSchema,
  FolderKind,
  MessageAuthor,
  type Origin,
  PostMessageRequestSchema,
  SessionSchema,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { encodeBinary } from "../codec/binary-encoding.js";
import { requireId, requireIdempotencyKey } from "../domain/ids.js";
import { type HostKeys, hostKeys } from "../store/keys.js";
import { embeddedChatId, embeddedMessageId } from "./embedded-ids.js";

/*
 * What the embedded host writes for a CreateChat or a PostMessage, checked before anything
 * is written: apart from the host's Redis calls so that a caller (the tenant rule,
 * rpc/host-tenant-guard.ts) may check a request alone, as the host checks it.
 */

/**
 * The embedded host's writes of a chat, as its createChat-2.lua makes them (`chatWrite`):
 * checked before anything is written, so that a caller may check a request alone.
 */
export interface EmbeddedChatWrite {
  readonly chatId: string;
  readonly keys: HostKeys;
  /** The serialized Chat and Session. */
  readonly chat: Buffer;
  readonly session: Buffer;
}

/** The embedded host's write of a message (postMessage-3.lua's arguments, `messageWrite`). */
export interface EmbeddedMessageWrite {
  readonly messageId: string;
  /** The serialized ChatMessage. */
  readonly message: Buffer;
}

const KNOWN_AUTHORS: ReadonlySet<MessageAuthor> = new Set([
  MessageAuthor.PERSON,
  MessageAuthor.AGENT,
  MessageAuthor.SUGGESTION,
]);

/** Checks an origin's ids (either may be empty); answers the origin to store. */
function checkOrigin(origin: Origin | undefined): Origin | undefined {
  if (origin === undefined) return undefined;
  if (origin.sessionId !== "") requireId("origin.session_id", origin.sessionId);
  if (origin.suggestionId !== "") requireId("origin.suggestion_id", origin.suggestionId);
  return origin;
}

/**
 * What CreateChat writes for a request, checked as the host checks it: the chat's id
 * (derived from the idempotency key), keys and records. The chat is also a session (same
 * id space): its workspace is the request's, its folder NORMAL, its settings the request's.
 */
export function chatWrite(
  request: MessageInitShape<typeof CreateChatRequestSchema>,
): EmbeddedChatWrite {
  const req = create(CreateChatRequestSchema, request);
  const key = requireIdempotencyKey("idempotency_key", req.idempotencyKey);
  const workspaceId = requireId("workspace_id", req.workspaceId);
  const origin = checkOrigin(req.origin);
  const chatId = embeddedChatId(key);
  const settings = req.settings ?? create(ChatSettingsSchema);
  const chat = create(ChatSchema, { chatId, workspaceId, title: req.title, settings, origin });
  const session = create(SessionSchema, {
    sessionId: chatId,
    workspaceId,
    folder: FolderKind.NORMAL,
    settings,
  });
  return {
    chatId,
    keys: hostKeys(chatId),
    chat: encodeBinary(ChatSchema, chat),
    session: encodeBinary(SessionSchema, session),
  };
}

/**
 * What PostMessage writes for a request, checked as the host checks it, and to which
 * chat: the message id is derived from the chat and the idempotency key.
 */
export function messageWrite(request: MessageInitShape<typeof PostMessageRequestSchema>): {
  readonly chatId: string;
  readonly write: EmbeddedMessageWrite;
} {
  const req = create(PostMessageRequestSchema, request);
  const key = requireIdempotencyKey("idempotency_key", req.idempotencyKey);
  const chatId = requireId("chat_id", req.chatId);
  if (!KNOWN_AUTHORS.has(req.author)) {
    throw new ConnectError(
      "author must be MESSAGE_AUTHOR_PERSON, MESSAGE_AUTHOR_AGENT or MESSAGE_AUTHOR_SUGGESTION",
      Code.InvalidArgument,
    );
  }
  const messageId = embeddedMessageId(chatId, key);
  const message = create(ChatMessageSchema, {
    messageId,
    author: req.author,
    text: req.text,
    origin: checkOrigin(req.origin),
    edited: req.edited,
  });
  return {
    chatId,
    write: { messageId, message: encodeBinary(ChatMessageSchema, message) },
  };
}
