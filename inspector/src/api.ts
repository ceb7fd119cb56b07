import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  type ChatHostClient,
  createChatHostClient,
  createLocalHostClient,
  createSuggestionClient,
  type LocalHostClient,
  type SuggestionClient,
} from "../../sdk/src/web.js";

const TOKEN_KEY = "suggest-task-inspector-token";

/** The token (static or a JWT), kept in sessionStorage: for this tab only, gone when it closes. */
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
 * `fetch`, to the origin that served the page (HTTP/1.1 or HTTP/2, cleartext or TLS). Its
 * watches are the SDK's own: they ask for heartbeats and reconnect after a restart.
 */
export interface Clients {
  readonly suggestions: SuggestionClient;
  readonly local: LocalHostClient;
  readonly host: ChatHostClient;
}

/** The clients for the service at `baseUrl` (the page's own origin). */
export function createClients(baseUrl: string): Clients {
  const options = { baseUrl, interceptors: [bearer] };
  return {
    suggestions: createSuggestionClient(options),
    local: createLocalHostClient(options),
    host: createChatHostClient(options),
  };
}

/** What the page may do with the token it holds (or without one). */
export type Access =
  | { readonly ok: true }
  | { readonly ok: false; readonly needsToken: boolean; readonly message: string };

/**
 * A chat id that names no chat the page shows: the access check reads its (empty) lists. It
 * follows the id rule, so for a good credential the read succeeds and no call fails.
 */
const ACCESS_CHECK_CHAT = "inspector.access-check";

/**
 * Asks the service what this page may do, with a read that succeeds for a credential of the
 * app role (the lists of a chat nobody uses): UNAUTHENTICATED or PERMISSION_DENIED mean
 * the token form; any other failure is the service's message.
 */
export async function probe(clients: Clients): Promise<Access> {
  const denied = await refusal(() =>
    clients.suggestions.listSuggestions({ sessionId: ACCESS_CHECK_CHAT }),
  );
  if (denied === undefined) return { ok: true };
  const needsToken = denied.code === Code.Unauthenticated || denied.code === Code.PermissionDenied;
  return { ok: false, needsToken, message: denied.rawMessage };
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

/**
 * What a JWT says it grants, read from its payload without checking it (the service checks
 * it on every call): its roles and workspaces (`scope`, as docs/operating.md "Credentials and tenants" spells it), and when it
 * expires. Undefined for a token that is not a JWT (a static token).
 */
export interface TokenClaims {
  readonly roles: readonly string[];
  /** The workspaces granted by name; `"*"` for every workspace. */
  readonly workspaces: readonly string[];
  readonly expires: Date | undefined;
}

/** The claims of `token` when it is a JWT (three base64url parts, a JSON payload). */
export function tokenClaims(token: string): TokenClaims | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  let payload: unknown;
  try {
    const base64 = (parts[1] ?? "").replaceAll("-", "+").replaceAll("_", "/");
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    payload = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof payload !== "object" || payload === null) return undefined;
  const { scope, exp } = payload as { scope?: unknown; exp?: unknown };
  const words = typeof scope === "string" ? scope.split(" ").filter((w) => w !== "") : [];
  return {
    roles: words.filter((w) => !w.startsWith("workspace:")),
    workspaces: words.filter((w) => w.startsWith("workspace:")).map((w) => w.slice(10)),
    expires: typeof exp === "number" ? new Date(exp * 1000) : undefined,
  };
}
