import type { Logger } from "pino";
import type { ServiceConfig } from "./config.js";
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
