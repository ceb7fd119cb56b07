import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type ChatHostService,
  type LocalHostService,
  SessionSchema,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { isGranted, type WorkspaceGrants } from "../domain/grants.js";
import { requireId } from "../domain/ids.js";
import type { EmbeddedChatHost } from "../host/embedded-host.js";
import { noChat, noSession } from "../host/embedded-refusals.js";
import { embeddedWorkspaceOf } from "../host/embedded-workspace.js";
import { createChatHostService, createLocalHostService } from "./host-service.js";
import { byGrants, notGranted, overriding } from "./tenant-guard.js";

/**
 * The tenant rule around the embedded host's `ChatHostService`: a credential of every
 * workspace calls it as it is; any other calls the same handlers over the host as its
 * grants show it (`grantedEmbeddedHost`). Pinned by test/pipeline/host-tenants.test.ts
 * and test/rpc/host-tenant-guard.test.ts.
 */
export function guardChatHost(
  impl: ServiceImpl<typeof ChatHostService>,
  host: EmbeddedChatHost,
): ServiceImpl<typeof ChatHostService> {
  const seen = (grants: WorkspaceGrants) =>
    createChatHostService(grantedEmbeddedHost(host, grants));
  return {
    getSession: byGrants(impl.getSession, (r, c, g) => seen(g).getSession(r, c)),
    createChat: byGrants(impl.createChat, (r, c, g) => seen(g).createChat(r, c)),
    postMessage: byGrants(impl.postMessage, (r, c, g) => seen(g).postMessage(r, c)),
  };
}

/** The same rule around the embedded host's `LocalHostService` (see `guardChatHost`). */
export function guardLocalHost(
  impl: ServiceImpl<typeof LocalHostService>,
  host: EmbeddedChatHost,
): ServiceImpl<typeof LocalHostService> {
  const seen = (grants: WorkspaceGrants) =>
    createLocalHostService(grantedEmbeddedHost(host, grants));
  return {
    putSession: byGrants(impl.putSession, (r, c, g) => seen(g).putSession(r, c)),
    getChat: byGrants(impl.getChat, (r, c, g) => seen(g).getChat(r, c)),
    createGoal: byGrants(impl.createGoal, (r, c, g) => seen(g).createGoal(r, c)),
  };
}

/**
 * The embedded host as a credential with `grants` sees it. A session or chat belongs to
 * the workspace GetChat reports (`embeddedWorkspaceOf`); one whose workspace is not
 * granted (or, without `workspace:*`, one in no workspace) is answered exactly as one the
 * host does not know: `no session "<id>"` for GetSession, `no chat "<id>"` for PostMessage,
 * GetChat and CreateGoal, after the same checks of the request the host makes first.
 * Writing into a workspace not granted is PERMISSION_DENIED: CreateChat in it, PutSession
 * of a session into it (`this credential is not granted workspace <id>`), and PutSession
 * of a session that is in one, which would move it out or change it (`this credential is
 * not granted the workspace of session "<id>"`, naming no foreign workspace).
 */
export function grantedEmbeddedHost(
  host: EmbeddedChatHost,
  grants: WorkspaceGrants,
): EmbeddedChatHost {
  /** Throws `unknown` when the host knows `id` in a workspace not granted. */
  const hideForeign = async (id: string, unknown: (id: string) => ConnectError) => {
    const workspaceId = await embeddedWorkspaceOf(host, id);
    if (workspaceId !== undefined && !isGranted(grants, workspaceId)) throw unknown(id);
  };
  return overriding(host, {
    getSession: async (request) => {
      await hideForeign(requireId("session_id", request.sessionId), noSession);
      return host.getSession(request);
    },
    createChat: async (request) => {
      host.chatWrite(request);
      const workspaceId = request.workspaceId ?? "";
      if (!isGranted(grants, workspaceId)) throw notGranted(workspaceId);
      return host.createChat(request);
    },
    postMessage: async (request) => {
      await hideForeign(host.messageWrite(request).chatId, noChat);
      return host.postMessage(request);
    },
    getChat: async (chatId) => {
      await hideForeign(requireId("chat_id", chatId), noChat);
      return host.getChat(chatId);
    },
    createGoal: async (chatId, messageId) => {
      await hideForeign(requireId("chat_id", chatId), noChat);
      return host.createGoal(chatId, messageId);
    },
    putSession: async (session) => {
      const { sessionId, workspaceId } = checkedSession(session);
      if (!isGranted(grants, workspaceId)) throw intoWorkspace(workspaceId);
      for (;;) {
        const current = await embeddedWorkspaceOf(host, sessionId);
        if (current !== undefined) {
          if (!isGranted(grants, current)) throw outOfWorkspace(sessionId);
          return host.putSession(session);
        }
        // Unknown when read: created only if it still is, so that a session made
        // meanwhile, in a workspace not granted, is never taken over.
        const created = await host.createSession(session);
        if (created !== undefined) return created;
      }
    },
  });
}

/** A PutSession's session, its ids checked as the host checks them, in its order. */
function checkedSession(session: MessageInitShape<typeof SessionSchema> | undefined): {
  readonly sessionId: string;
  readonly workspaceId: string;
} {
  const stored = create(SessionSchema, session ?? {});
  requireId("session.session_id", stored.sessionId);
  if (stored.workspaceId !== "") requireId("session.workspace_id", stored.workspaceId);
  return stored;
}

/**
 * PERMISSION_DENIED for a session that is in a workspace not granted (or in none): it
 * names the session the caller named, not the workspace, which is not the caller's to
 * learn.
 */
function outOfWorkspace(sessionId: string): ConnectError {
  return new ConnectError(
    `this credential is not granted the workspace of session "${sessionId}"`,
    Code.PermissionDenied,
  );
}

/** PERMISSION_DENIED for a session put into a workspace (or none) not granted. */
function intoWorkspace(workspaceId: string): ConnectError {
  if (workspaceId !== "") return notGranted(workspaceId);
  return new ConnectError(
    "this credential is not granted sessions in no workspace",
    Code.PermissionDenied,
  );
}
