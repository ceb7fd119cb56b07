import { hash } from "node:crypto";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type ChatSettings,
  ChatSettingsSchema,
  FolderKind,
  type Session,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { WorkspaceMissingReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { type ChosenOptions, NO_OPTIONS } from "./start-options.js";

/**
 * The rules of the chat that Start creates (docs/contract.md "What Start does", "The
 * person decides, the agent learns"): where it may start, what it runs as, and the keys that make
 * it one chat with one brief however often Start runs.
 */

/**
 * Why the offering session cannot start a chat, if it cannot: it belongs to no
 * workspace, or it runs in a scheduled task's folder (task-suggestion/workspace-missing).
 */
export function workspaceMissing(session: Session): WorkspaceMissingReason | undefined {
  if (session.workspaceId === "") return WorkspaceMissingReason.NO_WORKSPACE;
  if (session.folder === FolderKind.SCHEDULED_TASK) {
    return WorkspaceMissingReason.SCHEDULED_TASK_FOLDER;
  }
  return undefined;
}

/**
 * The idempotency keys of one Start, derived from (session, suggestion) only, so that
 * every Start of a suggestion, on any instance, before or after a crash, asks the host
 * for the same chat and the same brief: the single-flight guarantee rests on them when
 * a lock holder stalls or dies. Hashed to a fixed length that any host accepts.
 */
export function startIdempotencyKeys(
  sessionId: string,
  suggestionId: string,
): { readonly chat: string; readonly brief: string } {
  const digest = hash("sha256", `${sessionId}\n${suggestionId}`, "base64url");
  return { chat: `suggest-task:chat:${digest}`, brief: `suggest-task:brief:${digest}` };
}

/**
 * Inherited settings: the offering chat's model and permission, plus its preset
 * (sandbox and approval left unset, for the host to take from the preset), or, with no
 * preset, its sandbox and approval. The permission is always carried explicitly, so that a preset that would default to more (a read-only chat on
 * a full-access preset) cannot raise it: a started chat never runs with more permission
 * than the chat that offered it (test/rpc/start-settings.test.ts). The person's chosen
 * model replaces the inherited one, and a chosen permission the inherited one when it
 * is not above it (domain/start-options.ts).
 */
export function startedChatSettings(
  offering: ChatSettings | undefined,
  chosen: ChosenOptions = NO_OPTIONS,
): MessageInitShape<typeof ChatSettingsSchema> {
  const s = offering ?? create(ChatSettingsSchema);
  const model = chosen.model !== "" ? chosen.model : s.model;
  // A chosen permission replaces the inherited one only when it is not above it (the
  // request was refused otherwise; this holds even if the offering chat changed since).
  const permission =
    chosen.permission !== 0 && chosen.permission <= s.permission ? chosen.permission : s.permission;
  return s.presetId !== ""
    ? { presetId: s.presetId, model, permission }
    : { model, permission, sandbox: s.sandbox, approval: s.approval };
}
