import { randomUUID } from "node:crypto";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";

/** The `_meta` keys a runtime sets on `tools/call` (docs/agents.md "The call's context"). */
export const META_SESSION_ID = "oda.suggest/session_id";
export const META_TURN_ID = "oda.suggest/turn_id";
export const META_ROLE = "oda.suggest/role";
export const META_TOOL_CALL_ID = "oda.suggest/tool_call_id";

/** The HTTP header naming the chat, for a runtime that opens one connection per chat. */
export const SESSION_HEADER = "oda-session-id";

/** Known hosts' own conversation ids in `_meta`, tried in this order: Codex, VS Code. */
const HOST_CONVERSATION_KEYS = ["threadId", "vscode.conversationId"] as const;

/** The roles `oda.suggest/role` may name. */
const ROLES: Readonly<Record<string, AgentRole>> = {
  top_level: AgentRole.TOP_LEVEL,
  helper: AgentRole.HELPER,
};

/** A tool call's context as the RPCs take it (`ToolCallContext`). */
export interface McpCallContext {
  readonly sessionId: string;
  readonly turnId: string;
  readonly role: AgentRole;
  readonly toolCallId: string;
}

/** The context, or why the runtime's `_meta` cannot give one (a text the caller reads). */
export type ContextReading =
  | { readonly context: McpCallContext; readonly problem?: undefined }
  | { readonly problem: string };

/**
 * The context of one `tools/call`, as docs/agents.md states it:
 * - the chat: `_meta["oda.suggest/session_id"]`, else the `Oda-Session-Id` header, else a
 *   known host's own conversation id in `_meta` (`threadId`, `vscode.conversationId`);
 *   none is an empty session, which the tools refuse with the reference's text;
 * - the turn: `_meta["oda.suggest/turn_id"]`, else a fresh id, so that the call is a turn
 *   of its own (the one-per-turn rule cannot hold then; the others do);
 * - the role: `_meta["oda.suggest/role"]`, `top_level` or `helper`; unset is top level;
 * - the call's id: `_meta["oda.suggest/tool_call_id"]`, else none (no retry protection).
 * A key that is set but not a string, or a role that is neither value, is a problem.
 */
export function readCallContext(
  meta: Readonly<Record<string, unknown>> | undefined,
  sessionHeader: string | undefined,
): ContextReading {
  const read = (key: string): string | undefined | { readonly bad: string } => {
    const value = meta?.[key];
    if (value === undefined || value === null) return undefined;
    return typeof value === "string" ? value : { bad: `_meta["${key}"] must be a string` };
  };
  const session = read(META_SESSION_ID);
  const turn = read(META_TURN_ID);
  const role = read(META_ROLE);
  const toolCall = read(META_TOOL_CALL_ID);
  for (const value of [session, turn, role, toolCall]) {
    if (typeof value === "object") return { problem: value.bad };
  }
  const roleValue = role === undefined ? AgentRole.TOP_LEVEL : ROLES[role as string];
  if (roleValue === undefined) {
    return {
      problem: `_meta["${META_ROLE}"] must be "top_level" or "helper" (got ${JSON.stringify(role)})`,
    };
  }
  return {
    context: {
      sessionId:
        nonEmpty(session as string | undefined) ??
        nonEmpty(sessionHeader) ??
        hostConversation(meta) ??
        "",
      turnId: (turn as string | undefined) ?? `mcp-turn-${randomUUID()}`,
      role: roleValue,
      toolCallId: (toolCall as string | undefined) ?? "",
    },
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === "" ? undefined : value;
}

/** The first known host conversation id that is a non-empty string. */
function hostConversation(meta: Readonly<Record<string, unknown>> | undefined): string | undefined {
  for (const key of HOST_CONVERSATION_KEYS) {
    const value = meta?.[key];
    if (typeof value === "string" && value !== "") return value;
  }
  return undefined;
}
