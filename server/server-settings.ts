import type { Logger } from "pino";
import { ConfigError, defaultConfig, type ServiceConfig } from "./config.js";
import { type CertificateGrant, readClientCertMap } from "./pipeline/client-certs.js";
import type { RedisAccess } from "./redis/redis-client.js";
import type { WriteConfirmation } from "./redis/write-confirm.js";
import type { ClientLimits } from "./transport/connection-guard.js";

/** What starting a server needs beyond the config. */
export type ServerSettings = Pick<
  ServiceConfig,
  "host" | "port" | "chatHostUrl" | "readMaxBytes" | "maxTimeoutMs" | "shutdownGraceMs"
> &
  Partial<
    Pick<
      ServiceConfig,
      | "defaultDeadlineMs"
      | "authTokens"
      | "authJwt"
      | "metricsPort"
      | "tlsCertFile"
      | "tlsKeyFile"
      | "tlsClientCaFile"
      | "authClientCertsFile"
      | "corsAllowedOrigins"
      | "logLevel"
      | "chatHostToken"
      | "grpcFastPath"
      | "inspectorDir"
      | "shutdownDelayMs"
      | "redisWaitReplicas"
      | "redisWaitTimeoutMs"
      | "redisTls"
      | "redisSentinelUsername"
      | "redisSentinelPassword"
    >
  > & {
    /** Where the call log goes; by default pino to stdout at `logLevel`. */
    readonly logger?: Logger;
  } & Partial<
    Pick<
      ServiceConfig,
      "startLockTtlMs" | "startLockMaxHoldMs" | "chatHostTimeoutMs" | "retentionDays"
    >
  > &
  Partial<Pick<ServiceConfig, keyof ClientLimits>> & {
    readonly redisUrl: string;
  };

/**
 * The client limits of `settings` (transport/connection-guard.ts), the config's defaults
 * for those unset: a server started without them guards its port like the service does.
 */
export function clientLimitsOf(settings: ServerSettings): ClientLimits {
  return {
    firstBytesTimeoutMs: settings.firstBytesTimeoutMs ?? defaultConfig.firstBytesTimeoutMs,
    headersTimeoutMs: settings.headersTimeoutMs ?? defaultConfig.headersTimeoutMs,
    requestTimeoutMs: settings.requestTimeoutMs ?? defaultConfig.requestTimeoutMs,
    idleSessionTimeoutMs: settings.idleSessionTimeoutMs ?? defaultConfig.idleSessionTimeoutMs,
    maxConnections: settings.maxConnections ?? defaultConfig.maxConnections,
  };
}

/**
 * How many replicas confirm each write, and how long a write waits for them
 * (REDIS_WAIT_REPLICAS, REDIS_WAIT_TIMEOUT_MS), the config's defaults for those unset.
 */
export function writeConfirmationOf(settings: ServerSettings): WriteConfirmation {
  return {
    replicas: settings.redisWaitReplicas ?? defaultConfig.redisWaitReplicas,
    timeoutMs: settings.redisWaitTimeoutMs ?? defaultConfig.redisWaitTimeoutMs,
  };
}

/** What the Redis connections need beyond the URL: the sentinels' own credentials. */
export function redisAccessOf(
  settings: Pick<ServerSettings, "redisSentinelUsername" | "redisSentinelPassword" | "redisTls">,
): RedisAccess {
  return {
    sentinelUsername: settings.redisSentinelUsername,
    sentinelPassword: settings.redisSentinelPassword,
    tls: settings.redisTls,
  };
}

/** AUTH_CLIENT_CERTS_FILE's identities and grants; a file that does not parse stops the start. */
export async function clientCertsOf(
  settings: ServerSettings,
): Promise<ReadonlyMap<string, CertificateGrant> | undefined> {
  if (settings.authClientCertsFile === undefined) return undefined;
  return readClientCertMap(settings.authClientCertsFile).catch((err: Error) => {
    throw new ConfigError(err.message);
  });
}
