import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  createLocalHostClient,
  createSuggestionClient,
  type LocalHostClient,
  type SuggestionClient,
} from "../../sdk/src/web.js";

const TOKEN_KEY = "suggest-task-inspector-token";

/** The app token, kept in sessionStorage: for this tab only, gone when it closes. */
export const tokenStore = {
  get: (): string => sessionStorage.getItem(TOKEN_KEY) ?? "",
  set: (token: string): void => sessionStorage.setItem(TOKEN_KEY, token),
  clear: (): void => sessionStorage.removeItem(TOKEN_KEY),
};

/** Sends the stored token as `authorization: Bearer <token>`, and nothing when there is none. */
const bearer: Interceptor = (next) => (req) => {
  const token = tokenStore.get();
  if (token !== "") req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};

/**
 * The page's clients: the project's SDK (its web entry) over the Connect protocol on
 * `fetch`, to the origin that served the page (HTTP/1.1 or HTTP/2, cleartext or TLS).
 */
export interface Clients {
  readonly suggestions: SuggestionClient;
  readonly local: LocalHostClient;
}

/** The clients for the service at `baseUrl` (the page's own origin). */
export function createClients(baseUrl: string): Clients {
  const options = { baseUrl, interceptors: [bearer] };
  return { suggestions: createSuggestionClient(options), local: createLocalHostClient(options) };
}

/** What the page may do with the token it holds (or without one). */
export type Access =
  | { readonly ok: true; readonly inbox: true }
  | { readonly ok: true; readonly inbox: false; readonly why: string }
  | { readonly ok: false; readonly needsToken: boolean; readonly message: string };

/**
 * Asks the service what this page may do, without reading any chat: a ListSuggestions with
 * no session id is refused by the auth check (UNAUTHENTICATED, PERMISSION_DENIED) before it
 * is refused as malformed (INVALID_ARGUMENT), so the answer says whether the token is good.
 * The workspace inbox is asked the same way: UNIMPLEMENTED (or not granted) means the
 * chat-id view only.
 */
export async function probe(clients: Clients): Promise<Access> {
  const denied = await refusal(() => clients.suggestions.listSuggestions({ sessionId: "" }));
  if (denied?.code === Code.Unauthenticated) {
    return { ok: false, needsToken: true, message: denied.rawMessage };
  }
  if (denied?.code === Code.PermissionDenied) {
    return { ok: false, needsToken: true, message: denied.rawMessage };
  }
  if (denied !== undefined && denied.code !== Code.InvalidArgument) {
    return { ok: false, needsToken: false, message: denied.rawMessage };
  }
  const inbox = await refusal(() =>
    clients.suggestions.listWorkspaceSuggestions({ workspaceId: "" }),
  );
  if (inbox === undefined || inbox.code === Code.InvalidArgument) return { ok: true, inbox: true };
  return { ok: true, inbox: false, why: inbox.rawMessage };
}

/** The error a call fails with, as a ConnectError; undefined when it succeeds. */
export async function refusal(call: () => Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await call();
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

/** True for the error an aborted call (a watch the page closed) ends with. */
export function isAbort(err: unknown): boolean {
  return ConnectError.from(err).code === Code.Canceled;
}
