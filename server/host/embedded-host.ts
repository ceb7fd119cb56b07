import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { Cluster, Redis } from "ioredis";
import {
  type Chat,
  ChatMessageSchema,
  ChatSchema,
  type CreateChatRequestSchema,
  type CreateChatResponse,
  CreateChatResponseSchema,
  type CreateGoalResponse,
  CreateGoalResponseSchema,
  type GetChatResponse,
  GetChatResponseSchema,
  type GetSessionResponse,
  GetSessionResponseSchema,
  MessageAuthor,
  type PostMessageRequestSchema,
  type PostMessageResponse,
  PostMessageResponseSchema,
  type PutSessionResponse,
  PutSessionResponseSchema,
  type Session,
  SessionSchema,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { encodeBinary } from "../codec/binary-encoding.js";
import { requireId } from "../domain/ids.js";
import { turnsOf } from "../redis/redis-client.js";
import { TurnCommand, UTF8_REPLY } from "../redis/turn-waits.js";
import { confirmAfter } from "../redis/write-confirm.js";
import { hostKeys } from "../store/keys.js";
import { runScript } from "../store/run-script.js";
import type { ChatHost } from "./chat-host.js";
import { embeddedGoalId } from "./embedded-ids.js";
import { noChat, noMessage, noSession, notPersonsInstruction } from "./embedded-refusals.js";
import {
  chatWrite,
  type EmbeddedChatWrite,
  type EmbeddedMessageWrite,
  messageWrite,
} from "./embedded-writes.js";

/**
 * The chat host that ships with the service: sessions and chats kept in the same Redis,
 * so that the whole flow runs, and is tested, with nothing else installed. Chats and
 * sessions share one id space: a started chat is itself a session.
 */
export class EmbeddedChatHost implements ChatHost {
  /**
   * @param retentionMs how long its records of a session or chat live after their last
   *   write or read by a chat's offer (RETENTION_DAYS); 0, the default: for ever.
   */
  constructor(
    readonly redis: Redis | Cluster,
    readonly retentionMs = 0,
  ) {
    const { keyPrefix } = redis.options;
    this.#read = Object.freeze({ replyEncoding: null, ...(keyPrefix ? { keyPrefix } : {}) });
  }

  /** How a session's record is read: as bytes, under the client's key prefix, if any. */
  readonly #read: { readonly replyEncoding: null; readonly keyPrefix?: string };

  /** The expiry a record is written with: `PX <retention>`, or none. */
  get #expiry(): ["PX", number] | [] {
    return this.retentionMs > 0 ? ["PX", this.retentionMs] : [];
  }

  /** Creates or replaces a session. */
  async putSession(
    session: MessageInitShape<typeof SessionSchema> | undefined,
  ): Promise<PutSessionResponse> {
    return (await this.writeSession(session, [])) as PutSessionResponse;
  }

  /**
   * Creates a session only if the host has no session of that id yet (`SET NX`);
   * undefined, and nothing written, when it has one: a caller that decided on the
   * session's absence (the tenant rule's PutSession) never replaces one made meanwhile.
   */
  async createSession(
    session: MessageInitShape<typeof SessionSchema> | undefined,
  ): Promise<PutSessionResponse | undefined> {
    return this.writeSession(session, ["NX"]);
  }

  /** Writes a session record, checked first; undefined when the SET wrote nothing. */
  private async writeSession(
    session: MessageInitShape<typeof SessionSchema> | undefined,
    condition: ["NX"] | [],
  ): Promise<PutSessionResponse | undefined> {
    const stored = create(SessionSchema, session ?? {});
    requireId("session.session_id", stored.sessionId);
    if (stored.workspaceId !== "") requireId("session.workspace_id", stored.workspaceId);
    const key = hostKeys(stored.sessionId).session;
    const reply = await this.call(() =>
      confirmAfter(
        this.redis,
        key,
        (tracked) =>
          this.redis.sendCommand(
            new TurnCommand(
              undefined,
              "set",
              [key, encodeBinary(SessionSchema, stored), ...this.#expiry, ...condition],
              UTF8_REPLY,
              tracked,
            ),
          ) as Promise<unknown>,
      ),
    );
    if (reply === null) return undefined;
    return create(PutSessionResponseSchema, { session: stored });
  }

  /** A session; NOT_FOUND when unknown. */
  async getSession(request: { sessionId: string }): Promise<GetSessionResponse> {
    const sessionId = requireId("session_id", request.sessionId);
    const session = await this.findSession(sessionId);
    if (session === undefined) throw noSession(sessionId);
    return create(GetSessionResponseSchema, { session });
  }

  /** A session, or undefined when unknown. */
  async findSession(sessionId: string): Promise<Session | undefined> {
    // Read by every offer of the chat: with a retention, the read renews the record, so
    // that it lives as long as the chat's suggestions (GETEX).
    const key = hostKeys(sessionId).session;
    const name = this.retentionMs > 0 ? "getex" : "get";
    const read = new TurnCommand(turnsOf(this.redis), name, [key, ...this.#expiry], this.#read);
    const bytes = await this.call(() => this.redis.sendCommand(read) as Promise<Buffer | null>);
    return bytes === null ? undefined : this.sessionOf(bytes);
  }

  /**
   * A session from its record (`hostKeys(id).session`), as a script that reads it with
   * other keys of the session's slot answers it (store/start-steps.ts `StartSteps.begin`).
   */
  sessionOf(record: Uint8Array): Session {
    return fromBinary(SessionSchema, record);
  }

  /**
   * Creates a chat, once per idempotency key: the chat id is derived from the key
   * (`embeddedChatId`), and one script writes the chat and its session only if the chat
   * is not there yet, so retried and concurrent calls answer the same chat without any
   * key-to-chat map. The chat is also a session (same id space): its workspace is the
   * request's, its folder NORMAL, its settings the request's, so a started chat can
   * itself offer suggestions. Pinned by test/host/host.test.ts.
   */
  async createChat(
    request: MessageInitShape<typeof CreateChatRequestSchema>,
  ): Promise<CreateChatResponse> {
    const write = this.chatWrite(request);
    await this.call(() =>
      runScript(
        this.redis,
        "createChat",
        write.keys.chat,
        write.keys.session,
        write.chat,
        write.session,
        String(this.retentionMs),
      ),
    );
    return create(CreateChatResponseSchema, { chatId: write.chatId });
  }

  /**
   * What `createChat` writes for a request, checked as it checks it: the chat's id,
   * keys and records.
   */
  chatWrite(request: MessageInitShape<typeof CreateChatRequestSchema>): EmbeddedChatWrite {
    return chatWrite(request);
  }

  /**
   * Posts a message, once per (chat, idempotency key): the message id is derived from
   * both, and one script appends the message only if that id was not posted yet.
   * NOT_FOUND when the host knows no such chat (or session: they share one id space).
   */
  async postMessage(
    request: MessageInitShape<typeof PostMessageRequestSchema>,
  ): Promise<PostMessageResponse> {
    const { chatId, write } = this.messageWrite(request);
    const keys = hostKeys(chatId);
    const status = await this.call(() =>
      runScript(
        this.redis,
        "postMessage",
        keys.session,
        keys.messageIds,
        keys.messages,
        write.messageId,
        write.message,
        String(this.retentionMs),
      ),
    );
    if (status === PostStatus.NoChat) throw noChat(chatId);
    return create(PostMessageResponseSchema, { messageId: write.messageId });
  }

  /** What `postMessage` writes for a request, checked as it checks it, and to which chat. */
  messageWrite(request: MessageInitShape<typeof PostMessageRequestSchema>): {
    readonly chatId: string;
    readonly write: EmbeddedMessageWrite;
  } {
    return messageWrite(request);
  }

  /**
   * A chat with its messages, read in one MULTI so that the messages and the chat are
   * one snapshot. A chat the host created shows its title and origin; a session put with
   * PutSession is a chat too, without them. Workspace and settings are the session's, as
   * the chat runs now. NOT_FOUND when unknown.
   */
  async getChat(chatId: string): Promise<GetChatResponse> {
    return create(GetChatResponseSchema, { chat: await this.readChat(chatId) });
  }

  /**
   * Creates a goal from a message, only if it is the person's own instruction: a
   * suggestion's brief (author SUGGESTION) or the agent's words are refused with
   * PERMISSION_DENIED, so the started chat has to ask the person first. NOT_FOUND for an
   * unknown chat or message. The goal id is derived from the message, so a repeat
   * answers the same goal.
   */
  async createGoal(chatId: string, messageId: string): Promise<CreateGoalResponse> {
    const chat = await this.readChat(chatId);
    requireId("message_id", messageId);
    const message = chat.messages.find((m) => m.messageId === messageId);
    if (message === undefined) throw noMessage(chatId, messageId);
    if (message.author !== MessageAuthor.PERSON) {
      throw notPersonsInstruction(chatId, messageId, message.author);
    }
    return create(CreateGoalResponseSchema, {
      goalId: embeddedGoalId(chatId, messageId),
    });
  }

  /** A chat and its messages; NOT_FOUND when the host knows neither chat nor session. */
  private async readChat(chatId: string): Promise<Chat> {
    requireId("chat_id", chatId);
    const keys = hostKeys(chatId);
    const replies = await this.call(() =>
      this.redis
        .multi()
        .getBuffer(keys.chat)
        .getBuffer(keys.session)
        .lrangeBuffer(keys.messages, 0, -1)
        .exec(),
    );
    const [chatBytes, sessionBytes, messageList] = (replies ?? []).map(([err, value]) => {
      if (err) throw err;
      return value;
    }) as [Buffer | null, Buffer | null, Buffer[]];
    if (chatBytes === null && sessionBytes === null) throw noChat(chatId);
    const chat =
      chatBytes === null ? create(ChatSchema, { chatId }) : fromBinary(ChatSchema, chatBytes);
    if (sessionBytes !== null) {
      const session = fromBinary(SessionSchema, sessionBytes);
      chat.workspaceId = session.workspaceId;
      chat.settings = session.settings;
    }
    chat.messages = (messageList ?? []).map((bytes) => fromBinary(ChatMessageSchema, bytes));
    return chat;
  }

  /**
   * Runs a Redis call. Its failure goes up as it is: the RPC layer names it
   * (rpc/host-service.ts, rpc/errors.ts `dependencyError`).
   */
  private call<T>(fn: () => Promise<T>): Promise<T> {
    return fn();
  }
}

/** The status codes of lua/postMessage-3.lua. */
enum PostStatus {
  Posted = 0,
  Already = 1,
  NoChat = 2,
}
