import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Cluster, Redis } from "ioredis";
import {
  type CreateChatRequestSchema,
  type CreateChatResponse,
  type CreateGoalResponse,
  type GetChatResponse,
  type GetSessionResponse,
  GetSessionResponseSchema,
  type PostMessageRequestSchema,
  type PostMessageResponse,
  type PutSessionResponse,
  PutSessionResponseSchema,
  type Session,
  SessionSchema,
} from "../gen/oda/suggest/v1/chat_host_pb.js";
import type { ChatHost } from "./chat-host.js";
import { dependencyError } from "./errors.js";
import { hostKeys } from "./keys.js";
import { requireId } from "./validate.js";

/**
 * The chat host that ships with the service: sessions and chats kept in the same Redis,
 * so that the whole flow runs, and is tested, with nothing else installed. Chats and
 * sessions share one id space: a started chat is itself a session.
 */
export class EmbeddedChatHost implements ChatHost {
  constructor(readonly redis: Redis | Cluster) {}

  /** Creates or replaces a session. */
  async putSession(
    session: MessageInitShape<typeof SessionSchema> | undefined,
  ): Promise<PutSessionResponse> {
    const stored = create(SessionSchema, session ?? {});
    requireId("session.session_id", stored.sessionId);
    if (stored.workspaceId !== "") requireId("session.workspace_id", stored.workspaceId);
    await this.call(() =>
      this.redis.set(
        hostKeys(stored.sessionId).session,
        Buffer.from(toBinary(SessionSchema, stored)),
      ),
    );
    return create(PutSessionResponseSchema, { session: stored });
  }

  /** A session; NOT_FOUND when unknown. */
  async getSession(request: { sessionId: string }): Promise<GetSessionResponse> {
    const sessionId = requireId("session_id", request.sessionId);
    const session = await this.findSession(sessionId);
    if (session === undefined) {
      throw new ConnectError(`no session "${sessionId}"`, Code.NotFound);
    }
    return create(GetSessionResponseSchema, { session });
  }

  /** A session, or undefined when unknown. */
  async findSession(sessionId: string): Promise<Session | undefined> {
    const bytes = await this.call(() => this.redis.getBuffer(hostKeys(sessionId).session));
    return bytes === null ? undefined : fromBinary(SessionSchema, bytes);
  }

  async createChat(
    _request: MessageInitShape<typeof CreateChatRequestSchema>,
  ): Promise<CreateChatResponse> {
    throw new ConnectError("CreateChat is not implemented yet", Code.Unimplemented);
  }

  async postMessage(
    _request: MessageInitShape<typeof PostMessageRequestSchema>,
  ): Promise<PostMessageResponse> {
    throw new ConnectError("PostMessage is not implemented yet", Code.Unimplemented);
  }

  /** A chat with its messages; NOT_FOUND when unknown. (issue 4) */
  async getChat(_chatId: string): Promise<GetChatResponse> {
    throw new ConnectError("GetChat is not implemented yet", Code.Unimplemented);
  }

  /** Creates a goal from a person's own message; PERMISSION_DENIED otherwise. (issue 4) */
  async createGoal(_chatId: string, _messageId: string): Promise<CreateGoalResponse> {
    throw new ConnectError("CreateGoal is not implemented yet", Code.Unimplemented);
  }

  /** Runs a Redis call, answering UNAVAILABLE when Redis does not answer. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw dependencyError(err, "the embedded chat host's Redis");
    }
  }
}
