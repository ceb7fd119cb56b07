import { parseScope } from "./domain/grants.js";
import { isValidId } from "./domain/ids.js";
import { ROLES, type Role, type TokenGrant } from "./pipeline/auth.js";
import type { JwtSettings } from "./pipeline/jwt-verifier.js";
import { type RedisTls, RedisTlsError, readRedisTls } from "./redis/redis-tls.js";
import { parseRedisUrl, RedisUrlError } from "./redis/redis-url.js";

/** Readers of the settings' environment variables: each names the variable it refuses. */

/** A setting that cannot be used; its message names the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export type Env = Readonly<Record<string, string | undefined>>;

export function integer(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}

export function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL (got "${raw}")`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.join(" or ")} (got "${raw}")`);
  }
  return raw;
}

/** A Redis URL, one server or a cluster (`parseRedisUrl`). */
export function redisUrl(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  try {
    parseRedisUrl(raw);
  } catch (err) {
    if (err instanceof RedisUrlError) throw new ConfigError(`${name} ${err.message}`);
    throw err;
  }
  return raw;
}

/**
 * REDIS_URL and what reaching it takes: REDIS_TLS_* (`redisTls`) and the sentinels'
 * credentials (`sentinelCredentials`).
 */
export function redisSettings(env: Env): {
  redisUrl: string | undefined;
  redisTls: RedisTls | undefined;
  redisSentinelUsername: string | undefined;
  redisSentinelPassword: string | undefined;
} {
  const where = redisUrl(env, "REDIS_URL");
  return { redisUrl: where, redisTls: redisTls(env, where), ...sentinelCredentials(env) };
}

/**
 * REDIS_TLS_CA_FILE, REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE and REDIS_TLS_SERVERNAME for
 * the Redis of `redisUrl`: the files read and checked now, so that a bad one stops the
 * start (redis/redis-tls.ts `readRedisTls`); none set: undefined.
 */
export function redisTls(env: Env, redisUrl: string | undefined): RedisTls | undefined {
  const files = {
    caFile: env.REDIS_TLS_CA_FILE || undefined,
    certFile: env.REDIS_TLS_CERT_FILE || undefined,
    keyFile: env.REDIS_TLS_KEY_FILE || undefined,
    servername: env.REDIS_TLS_SERVERNAME || undefined,
  };
  try {
    return readRedisTls(files, redisUrl);
  } catch (err) {
    if (err instanceof RedisTlsError) throw new ConfigError(err.message);
    throw err;
  }
}

/**
 * REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD, the sentinels' own credentials
 * (the URL's are the data nodes'); refused beside a REDIS_URL that names no sentinels,
 * where they would silently do nothing.
 */
export function sentinelCredentials(env: Env): {
  redisSentinelUsername: string | undefined;
  redisSentinelPassword: string | undefined;
} {
  const username = env.REDIS_SENTINEL_USERNAME || undefined;
  const password = env.REDIS_SENTINEL_PASSWORD || undefined;
  const set = password === undefined ? "REDIS_SENTINEL_USERNAME" : "REDIS_SENTINEL_PASSWORD";
  if (
    (username !== undefined || password !== undefined) &&
    !/^rediss?\+sentinel:/.test(env.REDIS_URL ?? "")
  ) {
    throw new ConfigError(
      `${set} is set, but REDIS_URL names no sentinels (redis+sentinel://host:port/<master-name>)`,
    );
  }
  return { redisSentinelUsername: username, redisSentinelPassword: password };
}

/**
 * `role:token` entries separated by commas, e.g. `agent:s3cret,app:0th3r`, each
 * optionally followed by space-separated workspace grants as a JWT's scope spells them
 * (`app:0th3r workspace:acme workspace:globex`); an entry without grants opens every
 * workspace. Several tokens may share a role (rotation: add the new one, move the
 * clients, drop the old one).
 */
export function tokens(env: Env, name: string): readonly TokenGrant[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return [];
  const grants = raw.split(",").map((entry): TokenGrant => {
    const [first = "", ...words] = entry.trim().split(/[ \t]+/);
    const at = first.indexOf(":");
    const role = first.slice(0, at) as Role;
    const token = first.slice(at + 1);
    if (at < 0 || !ROLES.includes(role) || !/^[\x21-\x7e]{16,}$/.test(token)) {
      throw new ConfigError(
        `${name} must be role:token entries separated by commas, each role one of ${ROLES.join(", ")} and each token at least 16 printable characters, optionally followed by workspace:<id> grants`,
      );
    }
    if (words.length === 0) return { role, token };
    for (const word of words) {
      const id = word.startsWith("workspace:") ? word.slice("workspace:".length) : undefined;
      if (id === undefined || (id !== "*" && !isValidId(id))) {
        throw new ConfigError(
          `${name}: the grants after a token must be workspace:<id> or workspace:* (got "${word}")`,
        );
      }
    }
    return { role, token, grants: parseScope(words.join(" ")).grants };
  });
  const seen = new Set<string>();
  for (const { token } of grants) {
    // One token, one role: a token listed twice would silently get the first role.
    if (seen.has(token)) throw new ConfigError(`${name} lists the same token more than once`);
    seen.add(token);
  }
  return grants;
}

/** The JWT settings: a key set (a file or a URL, not both), an issuer and an audience. */
export function jwtSettings(env: Env): JwtSettings | undefined {
  const jwksFile = env.AUTH_JWKS_FILE || undefined;
  const jwksUrl = url(env, "AUTH_JWKS_URL", ["http:", "https:"]);
  const issuer = env.AUTH_JWT_ISSUER || undefined;
  const audience = env.AUTH_JWT_AUDIENCE || undefined;
  if (jwksFile === undefined && jwksUrl === undefined) {
    if (issuer !== undefined || audience !== undefined) {
      throw new ConfigError(
        "AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE need AUTH_JWKS_FILE or AUTH_JWKS_URL (the keys that sign the tokens)",
      );
    }
    return undefined;
  }
  if (jwksFile !== undefined && jwksUrl !== undefined) {
    throw new ConfigError("set AUTH_JWKS_FILE or AUTH_JWKS_URL, not both");
  }
  if (issuer === undefined || audience === undefined) {
    throw new ConfigError(
      `${jwksFile === undefined ? "AUTH_JWKS_URL" : "AUTH_JWKS_FILE"} needs AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE (every token's iss and aud)`,
    );
  }
  return { jwksFile, jwksUrl, issuer, audience };
}

/** Comma-separated origins (`https://app.example.com`, `http://localhost:5173`) or `*`. */
export function origins(env: Env, name: string): readonly string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return [];
  return raw.split(",").map((entry) => {
    const origin = entry.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (origin !== "*" && parsed?.origin !== origin) {
      throw new ConfigError(
        `${name} must be origins separated by commas, each scheme://host[:port] with no path or trailing slash, or * (got "${origin}")`,
      );
    }
    return origin;
  });
}

export function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "1" || raw === "true") return true;
  if (raw === "0" || raw === "false") return false;
  throw new ConfigError(`${name} must be 1, 0, true or false (got "${raw}")`);
}

export function tlsFiles(env: Env) {
  const cert = env.TLS_CERT_FILE || undefined;
  const key = env.TLS_KEY_FILE || undefined;
  const clientCa = env.TLS_CLIENT_CA_FILE || undefined;
  const clientCerts = env.AUTH_CLIENT_CERTS_FILE || undefined;
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError("TLS_CERT_FILE and TLS_KEY_FILE must be set together");
  }
  if (clientCa !== undefined && cert === undefined) {
    throw new ConfigError(
      "TLS_CLIENT_CA_FILE needs TLS_CERT_FILE and TLS_KEY_FILE (client certificates come with TLS)",
    );
  }
  if (clientCerts !== undefined && clientCa === undefined) {
    throw new ConfigError(
      "AUTH_CLIENT_CERTS_FILE needs TLS_CLIENT_CA_FILE (the CA that signs the client certificates)",
    );
  }
  return { cert, key, clientCa, clientCerts };
}
