import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { ALL_WORKSPACES, type WorkspaceGrants } from "../domain/grants.js";

/**
 * The workspaces the call's credential opens, put on the call's context by the call
 * pipeline's auth (server/pipeline/auth.ts) before the handler runs. A call that carries
 * none (a static token without grants, or no auth configured) opens every workspace.
 */
export const callerGrantsKey = createContextKey<WorkspaceGrants>(ALL_WORKSPACES, {
  description: "the caller's workspace grants",
});

/** The workspaces the call's credential opens (docs/operating.md "Credentials and tenants"). */
export function callerGrants(context: HandlerContext): WorkspaceGrants {
  return context.values.get(callerGrantsKey);
}
