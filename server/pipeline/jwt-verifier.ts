import { readFile, stat } from "node:fs/promises";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";

/** Where a JWT's keys come from, and what its claims must say (docs/operating.md "Credentials and tenants"). */
export interface JwtSettings {
  /** A JWKS file (`AUTH_JWKS_FILE`), reread when it changes or a token names an unknown key. */
  readonly jwksFile?: string | undefined;
  /** A JWKS URL (`AUTH_JWKS_URL`), fetched, cached and fetched again for an unknown key. */
  readonly jwksUrl?: string | undefined;
  /** The `iss` every token must carry. */
  readonly issuer: string;
  /** An `aud` every token must carry (one of its audiences). */
  readonly audience: string;
}

/** The claims of a verified token this service reads. */
export interface VerifiedToken {
  /** `scope`, as the token carries it (RFC 8693: space-separated). */
  readonly scope: string;
  /** When it stops being accepted, in ms since the epoch (`exp` plus the clock skew). */
  readonly expiresAtMs: number;
}

/** The clock skew allowed on `exp` and `nbf`, in seconds. */
export const CLOCK_SKEW_S = 60;

/**
 * Asymmetric signatures only: `none` and the HMAC algorithms are refused whatever the
 * key set holds, so a public key can never serve as an HMAC secret.
 */
export const JWT_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
] as const;

/** The least time between two rereads of the JWKS file for unknown keys, in ms. */
const FILE_REREAD_MS = 1_000;
/** How often the JWKS file's modification time is looked at, in ms. */
const FILE_STAT_MS = 5_000;

/**
 * Verifies bearer JWTs with `jose`: the signature by a key of the set (asymmetric
 * algorithms only), `iss`, `aud`, `exp` (required) and `nbf` with 60 s of skew. A token
 * that fails any check rejects; the caller answers UNAUTHENTICATED.
 */
export class JwtVerifier {
  readonly #keys: JWTVerifyGetKey;
  readonly #settings: JwtSettings;

  constructor(settings: JwtSettings) {
    this.#settings = settings;
    if (settings.jwksUrl !== undefined) {
      // jose caches the set, fetches it again for a key it does not hold (at most every
      // 30 s), and again once it is 10 minutes old.
      this.#keys = createRemoteJWKSet(new URL(settings.jwksUrl), {
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
        timeoutDuration: 5_000,
      });
    } else if (settings.jwksFile !== undefined) {
      this.#keys = fileKeySet(settings.jwksFile);
    } else {
      throw new Error("a JWT verifier needs AUTH_JWKS_FILE or AUTH_JWKS_URL");
    }
  }

  /** The token's claims once every check passed; rejects otherwise. */
  async verify(token: string): Promise<VerifiedToken> {
    const { payload } = await jwtVerify(token, this.#keys, {
      algorithms: [...JWT_ALGORITHMS],
      issuer: this.#settings.issuer,
      audience: this.#settings.audience,
      clockTolerance: CLOCK_SKEW_S,
      requiredClaims: ["exp"],
    });
    const scope = typeof payload.scope === "string" ? payload.scope : "";
    return { scope, expiresAtMs: ((payload.exp as number) + CLOCK_SKEW_S) * 1000 };
  }
}

/**
 * A key set read from a JWKS file: read again when its modification time changes (looked
 * at every 5 s at most) and when a token names a key it does not hold (every second at
 * most), so that a rotated key works without a restart.
 */
function fileKeySet(path: string): JWTVerifyGetKey {
  let current: { keys: JWTVerifyGetKey; mtimeMs: number } | undefined;
  let loading: Promise<void> | undefined;
  let readAt = 0;
  let statAt = 0;
  const load = () => {
    loading ??= (async () => {
      try {
        const [text, info] = await Promise.all([readFile(path, "utf8"), stat(path)]);
        const set = JSON.parse(text) as JSONWebKeySet;
        current = { keys: createLocalJWKSet(set), mtimeMs: info.mtimeMs };
        readAt = Date.now();
        statAt = readAt;
      } finally {
        loading = undefined;
      }
    })();
    return loading;
  };
  const fresh = async () => {
    if (current === undefined) return load();
    if (Date.now() - statAt < FILE_STAT_MS) return;
    statAt = Date.now();
    const info = await stat(path).catch(() => undefined);
    if (info !== undefined && info.mtimeMs !== current.mtimeMs) await load();
  };
  return async (header, token) => {
    await fresh();
    try {
      return await (current as { keys: JWTVerifyGetKey }).keys(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || Date.now() - readAt < FILE_REREAD_MS) {
        throw err;
      }
      await load();
      return (current as { keys: JWTVerifyGetKey }).keys(header, token);
    }
  };
}
