import {
  ConfigError,
  type Env,
  flag,
  integer,
  jwtSettings,
  origins,
  redisSettings,
  tlsFiles,
  tokens,
  url,
} from "./config-readers.js";
import type { TokenGrant } from "./pipeline/auth.js";
import type { JwtSettings } from "./pipeline/jwt-verifier.js";
import type { RedisTls } from "./redis/redis-tls.js";
import { defaultStartLockSettings } from "./store/start-lock-protocol.js";

export { ConfigError } from "./config-readers.js";

/** The service's settings. `main.ts` is the only module that reads them from the environment. */
export interface ServiceConfig {
  /** Address to listen on. */
  readonly host: string;
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /**
   * Redis to use: one server (`redis://`, `rediss://`), a Redis Cluster
   * (`redis+cluster://host:port,host:port`) or the primary Redis Sentinel names
   * (`redis+sentinel://host:port,host:port/<master-name>`); unset: `npm start` runs a
   * private `redis-server`.
   */
  readonly redisUrl: string | undefined;
  /** TLS to a `rediss` Redis with a team's own CA, client certificate, servername (REDIS_TLS_*). */
  readonly redisTls: RedisTls | undefined;
  /** The sentinels' own user and password (the URL's are the data nodes'). */
  readonly redisSentinelUsername: string | undefined;
  readonly redisSentinelPassword: string | undefined;
  /** A remote `ChatHostService`; unset: the embedded host is used and served. */
  readonly chatHostUrl: string | undefined;
  /** The bearer token sent to the remote chat host, if it asks for one. */
  readonly chatHostToken: string | undefined;
  /** Where the private `redis-server` keeps its data. */
  readonly dataDir: string;
  /** The built inspector page (`npm run build` writes it), served at `GET /`. */
  readonly inspectorDir: string;
  /** The largest request body accepted, in bytes. */
  readonly readMaxBytes: number;
  /** The most the service works on one unary call, in ms; a longer caller deadline is accepted and its work stops here. */
  readonly maxTimeoutMs: number;
  /** How long shutdown waits for calls in flight, in ms. */
  readonly shutdownGraceMs: number;
  /**
   * How long the service goes on serving after SIGTERM, not ready (`/readyz` 503), before
   * it drains, in ms: the time a load balancer takes to stop sending it calls.
   */
  readonly shutdownDelayMs: number;
  /** The deadline of a unary call whose caller set none, in ms. */
  readonly defaultDeadlineMs: number;
  /**
   * `ALLOW_UNAUTHENTICATED=1`: with no credentials configured, listen on `host` all the
   * same, for a mesh or gateway that authenticates every caller before it reaches the
   * service. Off: a service without credentials listens on loopback only.
   */
  readonly allowUnauthenticated: boolean;
  /** Static bearer tokens, their roles and grants; none (and no JWT): no auth, and loopback only. */
  readonly authTokens: readonly TokenGrant[];
  /** Bearer JWTs (`AUTH_JWKS_FILE` or `AUTH_JWKS_URL`, `AUTH_JWT_ISSUER`, `AUTH_JWT_AUDIENCE`). */
  readonly authJwt: JwtSettings | undefined;
  /**
   * `GET /metrics` on a port of its own (`METRICS_PORT`) instead of the service's port;
   * unset: on the service's port, behind a token of the `metrics` role when auth is on.
   */
  readonly metricsPort: number | undefined;
  /** A PEM certificate and key for TLS; unset: cleartext (h2c and HTTP/1.1). */
  readonly tlsCertFile: string | undefined;
  readonly tlsKeyFile: string | undefined;
  /**
   * A PEM bundle of the CAs whose client certificates are accepted (`TLS_CLIENT_CA_FILE`,
   * with TLS): every connection must present one they signed, or the handshake fails.
   */
  readonly tlsClientCaFile: string | undefined;
  /**
   * Client certificate identities mapped to roles and grants (`AUTH_CLIENT_CERTS_FILE`,
   * a JSON object; docs/operating.md), for calls that present no bearer token.
   */
  readonly authClientCertsFile: string | undefined;
  /**
   * Origins whose pages may call the service from a browser (`CORS_ALLOWED_ORIGINS`,
   * comma-separated, `*` for any); empty: none (same-origin pages only).
   */
  readonly corsAllowedOrigins: readonly string[];
  /** pino's level for the call log: fatal, error, warn, info, debug, trace or silent. */
  readonly logLevel: string;
  /** Unary binary gRPC answered straight on HTTP/2 streams (server/transport/grpc-fast-path/). */
  readonly grpcFastPath: boolean;
  /**
   * How many replicas must hold each write before it is acknowledged (Redis `WAIT`, sent
   * with the write); 0: acknowledged once the primary has it (and its AOF, if any).
   */
  readonly redisWaitReplicas: number;
  /** How long a write waits for `redisWaitReplicas` replicas, in ms; then UNAVAILABLE. */
  readonly redisWaitTimeoutMs: number;
  /** The lifetime of a Start's single-flight lock, in ms; its holder renews it. */
  readonly startLockTtlMs: number;
  /** The longest a Start holds its lock by renewing it, in ms; then it lapses. */
  readonly startLockMaxHoldMs: number;
  /** The deadline of each call to a remote chat host, in ms. */
  readonly chatHostTimeoutMs: number;
  /** How long a new connection may take to send enough bytes to tell its protocol, in ms. */
  readonly firstBytesTimeoutMs: number;
  /** How long an HTTP/1.1 request's headers may take to arrive, in ms. */
  readonly headersTimeoutMs: number;
  /**
   * How long a request may take to arrive in full (its body ended), from its start, in
   * ms; a call whose own deadline is shorter gets DEADLINE_EXCEEDED at its deadline.
   */
  readonly requestTimeoutMs: number;
  /** How long an HTTP/2 connection with no stream open stays, in ms; open streams keep it. */
  readonly idleSessionTimeoutMs: number;
  /** The most connections served at once; more are refused with a message. */
  readonly maxConnections: number;
  /**
   * Days a chat's suggestions are kept after its last write (RETENTION_DAYS): every key of
   * a chat expires that long after its last offer, settlement or withdrawal. Undefined,
   * the default: kept until erased (DeleteSuggestions).
   */
  readonly retentionDays?: number | undefined;
}

/** The defaults, frozen. */
export const defaultConfig: Readonly<ServiceConfig> = Object.freeze({
  host: "127.0.0.1",
  port: 8080,
  redisUrl: undefined,
  redisTls: undefined,
  redisSentinelUsername: undefined,
  redisSentinelPassword: undefined,
  chatHostUrl: undefined,
  chatHostToken: undefined,
  dataDir: ".data",
  inspectorDir: "dist/inspector",
  readMaxBytes: 256 * 1024,
  maxTimeoutMs: 60_000,
  shutdownGraceMs: 10_000,
  shutdownDelayMs: 0,
  defaultDeadlineMs: 30_000,
  authTokens: Object.freeze([]) as readonly TokenGrant[],
  authJwt: undefined,
  allowUnauthenticated: false,
  metricsPort: undefined,
  tlsCertFile: undefined,
  tlsKeyFile: undefined,
  tlsClientCaFile: undefined,
  authClientCertsFile: undefined,
  corsAllowedOrigins: Object.freeze([]) as readonly string[],
  logLevel: "info",
  grpcFastPath: true,
  redisWaitReplicas: 0,
  redisWaitTimeoutMs: 1_000,
  startLockTtlMs: defaultStartLockSettings.ttlMs,
  startLockMaxHoldMs: defaultStartLockSettings.maxHoldMs,
  chatHostTimeoutMs: 10_000,
  firstBytesTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleSessionTimeoutMs: 120_000,
  maxConnections: 10_000,
});

/** File descriptors kept back from connections: Redis, the log, files, refusals. */
const RESERVED_FILES = 256;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/**
 * Reads the settings from environment variables; a bad value throws a ConfigError.
 * `openFileLimit` (the process's limit on open files, when known) lowers the default
 * `maxConnections` to fit in it, so that connections cannot starve Redis of sockets.
 */
export function configFromEnv(env: Env, openFileLimit?: number): ServiceConfig {
  const logLevel = env.LOG_LEVEL || defaultConfig.logLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")} (got "${logLevel}")`);
  }
  const tls = tlsFiles(env);
  return {
    host: env.HOST || defaultConfig.host,
    defaultDeadlineMs: integer(
      env,
      "DEFAULT_DEADLINE_MS",
      defaultConfig.defaultDeadlineMs,
      1,
      3_600_000,
    ),
    authTokens: tokens(env, "AUTH_TOKENS"),
    authJwt: jwtSettings(env),
    allowUnauthenticated: flag(env, "ALLOW_UNAUTHENTICATED", defaultConfig.allowUnauthenticated),
    metricsPort:
      env.METRICS_PORT === undefined || env.METRICS_PORT === ""
        ? undefined
        : integer(env, "METRICS_PORT", 0, 0, 65535),
    tlsCertFile: tls.cert,
    tlsKeyFile: tls.key,
    tlsClientCaFile: tls.clientCa,
    authClientCertsFile: tls.clientCerts,
    corsAllowedOrigins: origins(env, "CORS_ALLOWED_ORIGINS"),
    logLevel,
    // On by default: a third of connect-node's CPU for SuggestTask, a quarter for
    // ListSuggestions (docs/performance.md "The gRPC path"); 0 keeps connect-node alone.
    grpcFastPath: flag(env, "GRPC_FAST_PATH", defaultConfig.grpcFastPath),
    port: integer(env, "PORT", defaultConfig.port, 0, 65535),
    ...redisSettings(env),
    // Unset: the embedded host, whose session record Start reads in its first script
    // (docs/performance.md "Where each RPC's time goes"); set: the product's own host.
    chatHostUrl: url(env, "CHAT_HOST_URL", ["http:", "https:"]),
    chatHostToken: env.CHAT_HOST_TOKEN || undefined,
    dataDir: env.DATA_DIR || defaultConfig.dataDir,
    inspectorDir: env.INSPECTOR_DIR || defaultConfig.inspectorDir,
    readMaxBytes: integer(env, "MAX_REQUEST_BYTES", defaultConfig.readMaxBytes, 1024, 64 << 20),
    maxTimeoutMs: integer(env, "MAX_DEADLINE_MS", defaultConfig.maxTimeoutMs, 1, 3_600_000),
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", defaultConfig.shutdownGraceMs, 0, 600_000),
    shutdownDelayMs: integer(env, "SHUTDOWN_DELAY_MS", defaultConfig.shutdownDelayMs, 0, 600_000),
    ...redisWait(env),
    startLockTtlMs: integer(env, "START_LOCK_TTL_MS", defaultConfig.startLockTtlMs, 50, 600_000),
    retentionDays:
      env.RETENTION_DAYS === undefined || env.RETENTION_DAYS === ""
        ? undefined
        : integer(env, "RETENTION_DAYS", 0, 1, 36_500),
    startLockMaxHoldMs: integer(
      env,
      "START_LOCK_MAX_HOLD_MS",
      defaultConfig.startLockMaxHoldMs,
      0,
      3_600_000,
    ),
    chatHostTimeoutMs: integer(
      env,
      "CHAT_HOST_TIMEOUT_MS",
      defaultConfig.chatHostTimeoutMs,
      1,
      600_000,
    ),
    ...clientLimits(env, openFileLimit),
  };
}

/** REDIS_WAIT_REPLICAS and REDIS_WAIT_TIMEOUT_MS: how many replicas confirm each write. */
function redisWait(env: Env): Pick<ServiceConfig, "redisWaitReplicas" | "redisWaitTimeoutMs"> {
  return {
    redisWaitReplicas: integer(env, "REDIS_WAIT_REPLICAS", defaultConfig.redisWaitReplicas, 0, 16),
    redisWaitTimeoutMs: integer(
      env,
      "REDIS_WAIT_TIMEOUT_MS",
      defaultConfig.redisWaitTimeoutMs,
      1,
      // Below the 5 s any Redis command may take (redis-client.ts `commandTimeout`): a
      // WAIT given up by the client while Redis still holds it would let the next WAIT
      // of its connection queue behind it.
      4_000,
    ),
  };
}

/** The timeouts of the stages a client controls, and the connection cap. */
function clientLimits(
  env: Env,
  openFileLimit: number | undefined,
): Pick<
  ServiceConfig,
  | "firstBytesTimeoutMs"
  | "headersTimeoutMs"
  | "requestTimeoutMs"
  | "idleSessionTimeoutMs"
  | "maxConnections"
> {
  const d = defaultConfig;
  const fitting =
    openFileLimit === undefined
      ? d.maxConnections
      : Math.min(d.maxConnections, Math.max(64, openFileLimit - RESERVED_FILES));
  return {
    firstBytesTimeoutMs: integer(env, "FIRST_BYTES_TIMEOUT_MS", d.firstBytesTimeoutMs, 1, 600_000),
    headersTimeoutMs: integer(env, "HEADERS_TIMEOUT_MS", d.headersTimeoutMs, 1, 600_000),
    requestTimeoutMs: integer(env, "REQUEST_TIMEOUT_MS", d.requestTimeoutMs, 1, 3_600_000),
    idleSessionTimeoutMs: integer(
      env,
      "IDLE_SESSION_TIMEOUT_MS",
      d.idleSessionTimeoutMs,
      1,
      3_600_000,
    ),
    maxConnections: integer(env, "MAX_CONNECTIONS", fitting, 1, 1_000_000),
  };
}
