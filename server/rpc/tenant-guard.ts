import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { SuggestionErrorCode } from "../domain/failures.js";
import type { SuggestionLists } from "../domain/fold.js";
import { isGranted, type WorkspaceGrants } from "../domain/grants.js";
import { requireId } from "../domain/ids.js";
import type { ChatHost } from "../host/chat-host.js";
import { noSession } from "../host/embedded-refusals.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import type { Watch, WatchHub } from "../store/watch-hub.js";
import { callerGrants } from "./caller-grants.js";
import { deleteSuggestions } from "./delete-suggestions.js";
import { storeCall, suggestionError } from "./errors.js";
import { listSettlements } from "./list-settlements.js";
import { getSuggestion, listSuggestions } from "./list-suggestions.js";
import { dismissSuggestion, draftSuggestion, restoreSuggestion } from "./settle-suggestion.js";
import { suggestTask } from "./suggest-task.js";
import type { SuggestionServiceDeps } from "./suggestion-service.js";
import { watchSuggestions } from "./watch-suggestions.js";
import { withdrawSuggestion } from "./withdraw-suggestion.js";

/**
 * The tenant rule (docs/operating.md "Credentials and tenants") around the
 * SuggestionService: a call whose credential opens every workspace runs as it is; for
 * any other, a suggestion whose offer was recorded in a workspace it does not open is
 * answered exactly as an absent one. Each handler runs as written, over a view of its
 * dependencies that hides what the credential may not see, so that its checks and its
 * answers stay its own:
 * - the reads (List, Get, Watch, ListSettlements) leave the foreign offers out;
 * - Draft, Dismiss and Restore of a foreign (or absent) offer run over a store in which
 *   it does not exist, and Start answers it `task-suggestion/not-found`, as an absent one;
 * - SuggestTask and WithdrawSuggestion ask a host that knows no session of a workspace
 *   not granted (nor, without `workspace:*`, one in no workspace);
 * - DeleteSuggestions of a chat whose offers or session name a workspace not granted
 *   erases nothing and answers as for an absent chat (the same empty answer);
 * - the inbox of a workspace not granted is PERMISSION_DENIED.
 * The host's own RPCs follow the same rule (rpc/host-tenant-guard.ts), bound with the
 * same `byGrants`. Pinned by test/pipeline/jwt-tenants.test.ts and tenant-battery.test.ts.
 */
export function guardTenants(
  impl: ServiceImpl<typeof SuggestionService>,
  deps: SuggestionServiceDeps,
): ServiceImpl<typeof SuggestionService> {
  const settle = <Q extends { sessionId: string; suggestionId: string }, R>(
    run: (deps: { store: SuggestionStore }, request: Q) => Promise<R>,
    all: (request: Q, context: HandlerContext) => R | Promise<R>,
  ) =>
    byGrants(all, async (request: Q, context, grants): Promise<R> => {
      if (await visibleOffer(deps.store, request, grants)) return all(request, context);
      return run({ store: withoutOffers(deps.store) }, request);
    });
  return {
    ...impl,
    suggestTask: byGrants(impl.suggestTask, (request, _, grants) =>
      suggestTask({ ...deps, host: grantedHost(deps.host, grants) }, request),
    ),
    withdrawSuggestion: byGrants(impl.withdrawSuggestion, (request, _, grants) =>
      withdrawSuggestion({ ...deps, host: grantedHost(deps.host, grants) }, request),
    ),
    listSuggestions: byGrants(impl.listSuggestions, (request, _, grants) =>
      listSuggestions({ store: grantedStore(deps.store, grants) }, request),
    ),
    getSuggestion: byGrants(impl.getSuggestion, (request, _, grants) =>
      getSuggestion({ store: grantedStore(deps.store, grants) }, request),
    ),
    listSettlements: byGrants(impl.listSettlements, (request, _, grants) =>
      listSettlements({ store: grantedStore(deps.store, grants) }, request),
    ),
    watchSuggestions: byGrants(impl.watchSuggestions, (request, context, grants) =>
      watchSuggestions({ watchHub: grantedHub(deps.watchHub, grants) }, request, context),
    ),
    startSuggestion: byGrants(impl.startSuggestion, async (request, context, grants) => {
      if (await visibleOffer(deps.store, request, grants)) {
        return impl.startSuggestion(request, context);
      }
      throw suggestionError({
        code: SuggestionErrorCode.NotFound,
        suggestionId: request.suggestionId,
      });
    }),
    draftSuggestion: settle(draftSuggestion, impl.draftSuggestion),
    dismissSuggestion: settle(dismissSuggestion, impl.dismissSuggestion),
    restoreSuggestion: settle(restoreSuggestion, impl.restoreSuggestion),
    listWorkspaceSuggestions: byGrants(
      impl.listWorkspaceSuggestions,
      (request, context, grants) => {
        checkWorkspace(request.workspaceId, grants);
        return impl.listWorkspaceSuggestions(request, context);
      },
    ),
    watchWorkspaceSuggestions: byGrants(
      impl.watchWorkspaceSuggestions,
      (request, context, grants) => {
        checkWorkspace(request.workspaceId, grants);
        return impl.watchWorkspaceSuggestions(request, context);
      },
    ),
    deleteSuggestions: byGrants(impl.deleteSuggestions, (request, _, grants) =>
      deleteSuggestions(deps, request, (workspaces) =>
        workspaces.every((ws) => isGranted(grants, ws)),
      ),
    ),
  };
}

/**
 * Binds one RPC to the tenant rule: a call whose credential opens every workspace (a
 * static token without grants, `workspace:*`, no auth) runs `all`, the handler as it
 * is; any other runs `some` with the credential's grants. Every guarded RPC, of every
 * service, is bound with it, so the rule is decided in one place.
 */
export function byGrants<Q, R>(
  all: (request: Q, context: HandlerContext) => R,
  some: (request: Q, context: HandlerContext, grants: WorkspaceGrants) => R,
): (request: Q, context: HandlerContext) => R {
  return (request, context) => {
    const grants = callerGrants(context);
    return grants.all ? all(request, context) : some(request, context, grants);
  };
}

/**
 * PERMISSION_DENIED `this credential is not granted workspace <id>`: the answer for
 * acting on a workspace the credential does not open, where the caller named it.
 */
export function notGranted(workspaceId: string): ConnectError {
  return new ConnectError(
    `this credential is not granted workspace ${workspaceId}`,
    Code.PermissionDenied,
  );
}

/**
 * PERMISSION_DENIED for the inbox of a workspace the credential does not open; the id
 * is checked first, as the handler checks it.
 */
function checkWorkspace(workspaceId: string, grants: WorkspaceGrants): void {
  requireId("workspace_id", workspaceId);
  if (!isGranted(grants, workspaceId)) throw notGranted(workspaceId);
}

/** True when the offer exists and its workspace is granted; both ids are checked first. */
async function visibleOffer(
  store: SuggestionStore,
  request: { sessionId: string; suggestionId: string },
  grants: WorkspaceGrants,
): Promise<boolean> {
  const sessionId = requireId("session_id", request.sessionId);
  const suggestionId = requireId("suggestion_id", request.suggestionId);
  const suggestion = await storeCall(() => store.suggestion(sessionId, suggestionId));
  return suggestion !== undefined && isGranted(grants, suggestion.workspaceId);
}

/**
 * `target`, with some of its members replaced; the others bound to it. A guarded handler
 * runs over such a view of its dependencies, so its own checks and answers stay its own.
 */
export function overriding<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.hasOwn(overrides, prop)) return (overrides as Record<PropertyKey, unknown>)[prop];
      const value: unknown = Reflect.get(t, prop, t);
      return typeof value === "function" ? value.bind(t) : value;
    },
  });
}

/** The lists with only the granted offers; the same object when all of them are. */
export function grantedLists(lists: SuggestionLists, grants: WorkspaceGrants): SuggestionLists {
  const shown = (s: Suggestion) => isGranted(grants, s.workspaceId);
  if (lists.open.every(shown) && lists.settled.every(shown)) return lists;
  const open = lists.open.filter(shown);
  const settled = lists.settled.filter(shown);
  const byId = new Map([...open, ...settled].map((s) => [s.id, s]));
  return { open, settled, byId };
}

/** The store as the credential sees it: foreign offers absent from every read. */
function grantedStore(store: SuggestionStore, grants: WorkspaceGrants): SuggestionStore {
  return overriding(store, {
    lists: async (sessionId) => grantedLists(await store.lists(sessionId), grants),
    suggestion: async (sessionId, suggestionId) => {
      const suggestion = await store.suggestion(sessionId, suggestionId);
      return suggestion !== undefined && isGranted(grants, suggestion.workspaceId)
        ? suggestion
        : undefined;
    },
    settlements: async (sessionId, after) =>
      (await store.settlements(sessionId, after)).filter((s) =>
        isGranted(grants, s.suggestion?.workspaceId ?? ""),
      ),
  });
}

/** A store in which the offer a settlement names does not exist (nothing is recorded). */
function withoutOffers(store: SuggestionStore): SuggestionStore {
  return overriding(store, {
    settleAndRead: async () => ({
      outcome: { kind: "not-found", state: SuggestionState.UNSPECIFIED, chatId: "" },
      suggestion: undefined,
    }),
  });
}

/** The hub whose session watches give the credential's lists. */
function grantedHub(hub: WatchHub, grants: WorkspaceGrants): WatchHub {
  return overriding(hub, {
    watch: (sessionId, signal) =>
      mappedWatch(hub.watch(sessionId, signal), (lists) => grantedLists(lists, grants)),
  });
}

/** `watch` with each value mapped, read or pushed as the watch is. */
function mappedWatch<T>(watch: Watch<T>, map: (value: T) => T): Watch<T> {
  const mapped: Watch<T> = {
    async next() {
      const result = await watch.next();
      return result.done === true ? result : { done: false, value: map(result.value) };
    },
    return: async () => (await watch.return?.()) ?? { done: true, value: undefined },
    throw: async (err: unknown) => (await watch.throw?.(err)) ?? { done: true, value: undefined },
    [Symbol.asyncIterator]: () => mapped,
    pushTo: (sink) =>
      watch.pushTo({ push: (value) => sink.push(map(value)), end: (error) => sink.end(error) }),
  };
  return mapped;
}

/**
 * The host as the credential sees it: a session of a workspace not granted is NOT_FOUND,
 * as one the host does not know (the embedded host's text; SuggestTask and
 * WithdrawSuggestion answer any NOT_FOUND of the host as an unknown session).
 */
function grantedHost(host: ChatHost, grants: WorkspaceGrants): ChatHost {
  return overriding(host, {
    getSession: async (request) => {
      const response = await host.getSession(request);
      if (response.session !== undefined && !isGranted(grants, response.session.workspaceId)) {
        throw noSession(request.sessionId);
      }
      return response;
    },
  });
}
