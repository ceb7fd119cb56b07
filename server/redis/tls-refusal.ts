import type { ConnectionOptions } from "node:tls";
import type { Cluster, Redis } from "ioredis";
import type { RedisClient } from "./redis-client.js";

/**
 * Why a TLS handshake with Redis failed, said as what to set (server/redis/redis-tls.ts
 * names the settings). A handshake that fails this way fails again the same way until
 * a setting (or Redis's certificate) changes, so the start stops on it rather than serve
 * NOT_SERVING (redis/store-checks.ts `storeProblemAtStart`).
 */

/** Node's codes for a certificate chain that does not lead to a CA it was given. */
const UNTRUSTED = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
  "INVALID_CA",
]);

/** A certificate outside its dates. */
const OUT_OF_DATE = new Set(["CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID"]);

/** Alerts of a Redis that refused the client certificate it was shown. */
const CLIENT_CERT_REFUSED = new Set([
  "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
  "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
  "ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN",
  "ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED",
]);

/**
 * What to tell the operator about `err`, a connection error of Redis at `where`
 * (host:port) whose TLS options were `tls`; undefined for an error that is no TLS refusal
 * (a Redis down or slow is waited for, as before).
 */
export function tlsRefusal(
  err: unknown,
  where: string,
  tls: ConnectionOptions | undefined,
): string | undefined {
  const { code, message, reason } = err as { code?: unknown; message?: unknown; reason?: unknown };
  if (typeof code !== "string") return undefined;
  const why = String(typeof reason === "string" ? reason : message);
  const notVerified = `Redis at ${where} presented a certificate that was not verified`;
  if (UNTRUSTED.has(code)) {
    const against =
      tls?.ca === undefined
        ? "with Node's own CAs (REDIS_TLS_CA_FILE is unset)"
        : "with REDIS_TLS_CA_FILE";
    return `${notVerified} ${against} (${why}); set REDIS_TLS_CA_FILE to the PEM bundle of the CA that signs Redis's certificate`;
  }
  if (OUT_OF_DATE.has(code)) return `${notVerified} (${why}); renew Redis's certificate`;
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") return wrongName(err, notVerified, tls);
  if (code === "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED") {
    return `Redis at ${where} asks for a client certificate (${why}); set REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE to one signed by a CA that Redis trusts`;
  }
  if (CLIENT_CERT_REFUSED.has(code)) {
    return `Redis at ${where} refused the client certificate of REDIS_TLS_CERT_FILE (${why}); use one signed by a CA that Redis trusts (its tls-ca-cert-file)`;
  }
  return undefined;
}

/**
 * A certificate that does not name the host (or REDIS_TLS_SERVERNAME): Node's error
 * carries the name checked (`host`) and the certificate's names (`cert.subjectaltname`).
 */
function wrongName(err: unknown, notVerified: string, tls: ConnectionOptions | undefined): string {
  const { host, cert } = err as { host?: unknown; cert?: { subjectaltname?: unknown } };
  const names = typeof cert?.subjectaltname === "string" ? cert.subjectaltname : "no names";
  const todo =
    tls?.servername === undefined
      ? "set REDIS_TLS_SERVERNAME to a name the certificate holds"
      : "REDIS_TLS_SERVERNAME must be a name the certificate holds";
  return `${notVerified}: it names ${names}, not ${String(host)}; ${todo}`;
}

/**
 * Follows `client`'s connection errors (each node's, for a cluster) until `stop`, and
 * answers the first TLS refusal among them (`tlsRefusal`), if any.
 */
export function followTlsRefusals(client: RedisClient): {
  readonly first: () => string | undefined;
  readonly stop: () => void;
} {
  let first: string | undefined;
  const note = (err: unknown, where: string, tls: ConnectionOptions | undefined) => {
    first ??= tlsRefusal(err, where, tls);
  };
  if (client.isCluster) {
    const cluster = client as Cluster;
    const tls = cluster.options.redisOptions?.tls;
    const onNodeError = (err: unknown, key: string) => note(err, key, tls);
    cluster.on("node error", onNodeError);
    return { first: () => first, stop: () => cluster.off("node error", onNodeError) };
  }
  const redis = client as Redis;
  const { host, port, tls } = redis.options;
  const onError = (err: unknown) => note(err, `${host}:${port}`, tls);
  redis.on("error", onError);
  return { first: () => first, stop: () => redis.off("error", onError) };
}
