import { hash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { ALL_WORKSPACES, parseScope, type WorkspaceGrants } from "../domain/grants.js";
import { callerGrantsKey } from "../rpc/caller-grants.js";
import type { Call, CallHook } from "./call-pipeline.js";
import {
  type CertificateGrant,
  type ClientIdentity,
  certificateGrant,
  clientIdentityKey,
  identityName,
} from "./client-certs.js";
import type { JwtVerifier } from "./jwt-verifier.js";

/** The roles a credential can hold. `metrics` reads `GET /metrics` and calls no RPC. */
export type Role = "agent" | "app" | "host-admin" | "metrics";

/** The roles, as AUTH_TOKENS and a JWT's `scope` spell them. */
export const ROLES: readonly Role[] = ["agent", "app", "host-admin", "metrics"];

/** One configured static token. */
export interface TokenGrant {
  readonly role: Role;
  readonly token: string;
  /** The workspaces it opens; unset: every workspace. */
  readonly grants?: WorkspaceGrants;
}

/** Who a verified credential is: its roles and the workspaces it opens. */
export interface Principal {
  readonly roles: readonly Role[];
  readonly grants: WorkspaceGrants;
}

/**
 * The procedures of the MCP tools (`/mcp/suggest_task`, ...): the agent's, like the
 * RPCs they run.
 */
export const MCP_PROCEDURES = "/mcp/";

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
    MCP_PROCEDURES,
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
  metrics: [],
};

/** Services that need a credential at all. */
const GUARDED_SERVICES = [
  "/oda.suggest.v1.SuggestionService/",
  MCP_PROCEDURES,
  ...GRANTS["host-admin"],
];

/**
 * True when `procedure` needs a credential at all when credentials are configured; the
 * services open to anyone (health, reflection) do not.
 */
export function needsCredential(procedure: string): boolean {
  return GUARDED_SERVICES.some((prefix) => procedure.startsWith(prefix));
}

/** The refusal of a call without a valid credential. */
const UNAUTHENTICATED = "a valid bearer token is required";

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

/** What the auth hook checks credentials against. */
export interface AuthSettings {
  /** Static tokens (`AUTH_TOKENS`). */
  readonly tokens: readonly TokenGrant[];
  /** Bearer JWTs (`AUTH_JWKS_FILE` or `AUTH_JWKS_URL`), when configured. */
  readonly jwt?: JwtVerifier | undefined;
  /**
   * Client certificate identities and what they grant (AUTH_CLIENT_CERTS_FILE), read for
   * a call that presents no bearer token on a connection whose certificate was verified.
   */
  readonly clientCerts?: ReadonlyMap<string, CertificateGrant> | undefined;
}

/** The most verified JWTs kept; the oldest is forgotten first. */
const JWT_CACHE_SIZE = 10_000;

/**
 * Finds the principal of a bearer token: a static token (compared in constant time by
 * digest), or a JWT verified once and then kept until it expires, so that a caller
 * presenting the same token again costs one map lookup. A token that is neither is
 * undefined; a JWT not verified yet answers a promise.
 */
export class Credentials {
  readonly #static: readonly { readonly digest: Buffer; readonly principal: Principal }[];
  readonly #jwt: JwtVerifier | undefined;
  readonly #certs: ReadonlyMap<string, CertificateGrant> | undefined;
  readonly #verified = new Map<string, { principal: Principal; expiresAtMs: number }>();

  constructor(settings: AuthSettings) {
    this.#static = settings.tokens.map((t) => ({
      digest: digest(t.token),
      principal: { roles: [t.role], grants: t.grants ?? ALL_WORKSPACES },
    }));
    this.#jwt = settings.jwt;
    this.#certs = settings.clientCerts;
  }

  /** True when any credential is configured (else every call is allowed). */
  get enabled(): boolean {
    return this.#static.length > 0 || this.#jwt !== undefined || this.#certs !== undefined;
  }

  /** True when client certificates are mapped to roles (AUTH_CLIENT_CERTS_FILE). */
  get acceptsCertificates(): boolean {
    return this.#certs !== undefined;
  }

  /** The principal of a verified client certificate; undefined when it is not mapped. */
  principalOfCertificate(identity: ClientIdentity): Principal | undefined {
    const grant = this.#certs === undefined ? undefined : certificateGrant(this.#certs, identity);
    if (grant === undefined) return undefined;
    return { roles: ROLES.filter((r) => grant.words.includes(r)), grants: grant.grants };
  }

  /** The principal of `token`; undefined when it is none. */
  principalOf(token: string | undefined): Principal | undefined | Promise<Principal | undefined> {
    if (token === undefined) return undefined;
    if (this.#jwt !== undefined && isJwtShaped(token)) {
      const kept = this.#verified.get(token);
      if (kept !== undefined && kept.expiresAtMs > Date.now()) return kept.principal;
      if (kept !== undefined) this.#verified.delete(token);
      return this.#verifyJwt(this.#jwt, token);
    }
    if (this.#static.length === 0) return undefined;
    const presented = digest(token);
    return this.#static.find((k) => timingSafeEqual(k.digest, presented))?.principal;
  }

  async #verifyJwt(jwt: JwtVerifier, token: string): Promise<Principal | undefined> {
    let verified: Awaited<ReturnType<JwtVerifier["verify"]>>;
    try {
      verified = await jwt.verify(token);
    } catch {
      return undefined;
    }
    const scope = parseScope(verified.scope);
    const roles = ROLES.filter((r) => scope.words.includes(r));
    const principal: Principal = { roles, grants: scope.grants };
    if (this.#verified.size >= JWT_CACHE_SIZE) {
      const oldest = this.#verified.keys().next();
      if (oldest.done !== true) this.#verified.delete(oldest.value);
    }
    this.#verified.set(token, { principal, expiresAtMs: verified.expiresAtMs });
    return principal;
  }
}

/** Three base64url parts: a compact JWS. */
function isJwtShaped(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

/** True when one of `roles` may call `procedure`. */
export function mayCall(roles: readonly Role[], procedure: string): boolean {
  return roles.some((role) =>
    GRANTS[role].some((p) => (p.endsWith("/") ? procedure.startsWith(p) : procedure === p)),
  );
}

/**
 * Bearer authentication: a static token with its role (several per role, for rotation),
 * or a JWT whose `scope` carries roles and workspace grants. A missing, unknown or
 * invalid credential is UNAUTHENTICATED; a valid one outside its roles is
 * PERMISSION_DENIED. Both refuse the call before its handler runs, so no
 * unauthenticated call reaches Redis. The workspaces the credential opens go on the
 * call's context (`callerGrantsKey`) for the handlers' tenant rule. With no credential
 * configured every call is allowed (the server then listens on loopback only).
 */
export function bearerAuth(settings: Credentials | AuthSettings | readonly TokenGrant[]): CallHook {
  const credentials =
    settings instanceof Credentials
      ? settings
      : new Credentials(
          Array.isArray(settings) ? { tokens: settings } : (settings as AuthSettings),
        );
  if (!credentials.enabled) return {};
  const admit = (call: Call, principal: Principal | undefined, noun = "token") => {
    if (principal === undefined) throw new ConnectError(UNAUTHENTICATED, Code.Unauthenticated);
    if (!mayCall(principal.roles, call.procedure)) {
      throw new ConnectError(
        `${credentialOf(principal.roles, noun)} may not call ${call.procedure.slice(1)}`,
        Code.PermissionDenied,
      );
    }
    if (!principal.grants.all) call.context.values.set(callerGrantsKey, principal.grants);
  };
  /** A call without a bearer token, on a connection whose client certificate was verified. */
  const admitCertificate = (call: Call, identity: ClientIdentity) => {
    const principal = credentials.principalOfCertificate(identity);
    if (principal === undefined) {
      throw new ConnectError(
        `the client certificate ${identityName(identity)} is granted no role`,
        Code.PermissionDenied,
      );
    }
    admit(call, principal, "certificate");
  };
  return {
    before(call) {
      if (!needsCredential(call.procedure)) return undefined;
      const token = presentedToken(call.context.requestHeader.get("authorization"));
      if (token === undefined && credentials.acceptsCertificates) {
        const identity = call.context.values.get(clientIdentityKey);
        if (identity !== undefined) return admitCertificate(call, identity);
      }
      const principal = credentials.principalOf(token);
      // A JWT seen for the first time waits for its verification; then it is kept.
      return principal instanceof Promise
        ? principal.then((p) => admit(call, p))
        : admit(call, principal);
    },
  };
}

/**
 * True when the `authorization` header value carries a credential holding `role`
 * (`GET /metrics` asks for `metrics`); always true when no credential is configured.
 */
export async function holdsRole(
  credentials: Credentials,
  header: string | undefined,
  role: Role,
): Promise<boolean> {
  if (!credentials.enabled) return true;
  const principal = await credentials.principalOf(presentedToken(header ?? null));
  return principal?.roles.includes(role) === true;
}

/**
 * `a token of the app role`, `a token of the agent and app roles`, `a token of no role`
 * (`a certificate of ...` for a client certificate's).
 */
function credentialOf(roles: readonly Role[], noun: string): string {
  if (roles.length === 0) return `a ${noun} of no role`;
  if (roles.length === 1) return `a ${noun} of the ${roles[0]} role`;
  return `a ${noun} of the ${roles.slice(0, -1).join(", ")} and ${roles.at(-1)} roles`;
}
