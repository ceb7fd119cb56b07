import { hash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { CallHook } from "./call-pipeline.js";

/** The roles a bearer token can hold. */
export type Role = "agent" | "app" | "host-admin";

/** The roles, as AUTH_TOKENS spells them. */
export const ROLES: readonly Role[] = ["agent", "app", "host-admin"];

/** One configured token. */
export interface TokenGrant {
  readonly role: Role;
  readonly token: string;
}

/**
 * Least privilege: what each role may call, by procedure (`/Service/Method`) or by
 * whole service (`/Service/`). Services not named here (health, reflection) are open,
 * as operators and their tools expect.
 */
const GRANTS: Readonly<Record<Role, readonly string[]>> = {
  agent: [
    "/oda.suggest.v1.SuggestionService/SuggestTask",
    "/oda.suggest.v1.SuggestionService/WithdrawSuggestion",
    "/oda.suggest.v1.SuggestionService/ListSettlements",
  ],
  app: [
    "/oda.suggest.v1.SuggestionService/ListSuggestions",
    "/oda.suggest.v1.SuggestionService/GetSuggestion",
    "/oda.suggest.v1.SuggestionService/StartSuggestion",
    "/oda.suggest.v1.SuggestionService/DraftSuggestion",
    "/oda.suggest.v1.SuggestionService/DismissSuggestion",
    "/oda.suggest.v1.SuggestionService/RestoreSuggestion",
    "/oda.suggest.v1.SuggestionService/WatchSuggestions",
    "/oda.suggest.v1.SuggestionService/ListSettlements",
    "/oda.suggest.v1.SuggestionService/ListWorkspaceSuggestions",
    "/oda.suggest.v1.SuggestionService/WatchWorkspaceSuggestions",
    "/oda.suggest.v1.SuggestionService/DeleteSuggestions",
  ],
  "host-admin": ["/oda.suggest.v1.ChatHostService/", "/oda.suggest.v1.LocalHostService/"],
};

/** Services that need a token at all. */
const GUARDED_SERVICES = ["/oda.suggest.v1.SuggestionService/", ...GRANTS["host-admin"]];

function digest(token: string): Buffer {
  return hash("sha256", token, "buffer");
}

/**
 * The token of an `authorization` header value, one comparison whatever the protocol:
 * the spaces and tabs around the value are not part of it (RFC 9110 section 5.5's OWS,
 * which HTTP/1.1's parser has already taken off), and what is left must be `Bearer`, one
 * space and a token with no whitespace in it. Over HTTP/2 a value that starts or ends
 * with whitespace makes the request malformed (RFC 9113 section 8.2.1): Node 20 drops
 * that field before it gets here, so such a call arrives with no token at all.
 */
export function presentedToken(value: string | null): string | undefined {
  const match = /^Bearer ([^\s]+)$/i.exec((value ?? "").replace(/^[ \t]+|[ \t]+$/g, ""));
  return match?.[1];
}

/**
 * Bearer-token authentication with a role per token. A missing or unknown token is
 * UNAUTHENTICATED; a valid token outside its role is PERMISSION_DENIED. Both refuse the
 * call before its handler runs, so no unauthenticated call reaches Redis. With no
 * tokens configured every call is allowed (the server then listens on loopback only).
 */
export function bearerAuth(grants: readonly TokenGrant[]): CallHook {
  const known = grants.map((g) => ({ role: g.role, digest: digest(g.token) }));
  return {
    before(call) {
      if (known.length === 0) return;
      if (!GUARDED_SERVICES.some((prefix) => call.procedure.startsWith(prefix))) return;
      const token = presentedToken(call.context.requestHeader.get("authorization"));
      const presented = token === undefined ? undefined : digest(token);
      const role = presented && known.find((k) => timingSafeEqual(k.digest, presented))?.role;
      if (!role) {
        throw new ConnectError("a valid bearer token is required", Code.Unauthenticated);
      }
      const allowed = GRANTS[role].some((p) =>
        p.endsWith("/") ? call.procedure.startsWith(p) : call.procedure === p,
      );
      if (!allowed) {
        throw new ConnectError(
          `a token of the ${role} role may not call ${call.procedure.slice(1)}`,
          Code.PermissionDenied,
        );
      }
    },
  };
}
