/** The service's settings. `main.ts` is the only module that reads them from the environment. */
export interface ServiceConfig {
  /** Address to listen on. */
  readonly host: string;
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /** Redis to use; unset: `npm start` runs a private `redis-server`. */
  readonly redisUrl: string | undefined;
  /** A remote `ChatHostService`; unset: the embedded host is used and served. */
  readonly chatHostUrl: string | undefined;
  /** Where the private `redis-server` keeps its data. */
  readonly dataDir: string;
  /** The largest request body accepted, in bytes. */
  readonly readMaxBytes: number;
  /** The longest deadline a caller may ask for, in ms. */
  readonly maxTimeoutMs: number;
  /** How long shutdown waits for calls in flight, in ms. */
  readonly shutdownGraceMs: number;
}

/** The defaults, frozen. */
export const defaultConfig: Readonly<ServiceConfig> = Object.freeze({
  host: "127.0.0.1",
  port: 8080,
  redisUrl: undefined,
  chatHostUrl: undefined,
  dataDir: ".data",
  readMaxBytes: 256 * 1024,
  maxTimeoutMs: 60_000,
  shutdownGraceMs: 10_000,
});

/** A setting that cannot be used; its message names the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Readonly<Record<string, string | undefined>>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}

function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
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

/** Reads the settings from environment variables; a bad value throws a ConfigError. */
export function configFromEnv(env: Env): ServiceConfig {
  return {
    host: env.HOST || defaultConfig.host,
    port: integer(env, "PORT", defaultConfig.port, 0, 65535),
    redisUrl: url(env, "REDIS_URL", ["redis:", "rediss:"]),
    chatHostUrl: url(env, "CHAT_HOST_URL", ["http:", "https:"]),
    dataDir: env.DATA_DIR || defaultConfig.dataDir,
    readMaxBytes: integer(env, "MAX_REQUEST_BYTES", defaultConfig.readMaxBytes, 1024, 64 << 20),
    maxTimeoutMs: integer(env, "MAX_DEADLINE_MS", defaultConfig.maxTimeoutMs, 1, 3_600_000),
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", defaultConfig.shutdownGraceMs, 0, 600_000),
  };
}
