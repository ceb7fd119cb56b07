import { fromBinary } from "@bufbuild/protobuf";
import { ChatSchema, SessionSchema } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { hostKeys } from "../store/keys.js";
import type { EmbeddedChatHost } from "./embedded-host.js";

/**
 * The workspace of a session or chat of the embedded host, as its GetChat reports it: the
 * session's workspace when the session is recorded (a started chat is a session of the
 * workspace of the session it was started from), else the chat's own record's; undefined
 * when the host knows neither. Both records are read in one MULTI (one slot), without
 * renewing their retention, so that asking whose it is changes nothing. The tenant rule
 * of the host's RPCs (rpc/host-tenant-guard.ts) decides with it.
 */
export async function embeddedWorkspaceOf(
  host: EmbeddedChatHost,
  id: string,
): Promise<string | undefined> {
  const keys = hostKeys(id);
  const replies = await host.redis.multi().getBuffer(keys.session).getBuffer(keys.chat).exec();
  const [sessionBytes, chatBytes] = (replies ?? []).map(([err, value]) => {
    if (err) throw err;
    return value;
  }) as [Buffer | null, Buffer | null];
  if (sessionBytes !== null) return fromBinary(SessionSchema, sessionBytes).workspaceId;
  if (chatBytes !== null) return fromBinary(ChatSchema, chatBytes).workspaceId;
  return undefined;
}
