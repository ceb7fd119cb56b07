import { type ConnectionOptions, connect } from "node:tls";
import { type RedisTls, tlsOptions } from "./redis-tls.js";
import { parseRedisUrl } from "./redis-url.js";

/**
 * Why a TLS handshake with Redis failed, said as what to set (server/redis/redis-tls.ts
 * names the settings). A handshake that fails this way fails again the same way until
 * a setting (or Redis's certificate) changes, so the start stops on it rather than wait
 * for a Redis that will never be reached (redis/store-checks.ts `storeProblemAtStart`).
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
 * The TLS refusal of the Redis of `url` (REDIS_URL) with `tls` (REDIS_TLS_*), found by a
 * handshake of its own with each endpoint the URL names (one server, each cluster seed,
 * or each sentinel) and a PING, or undefined when every handshake is accepted, the URL is not TLS,
 * or an endpoint fails for another reason (down, slow: the client waits for it, as
 * before). Its own connection, because a client's errors do not all reach its listeners
 * (a cluster asks for its slots on a connection of ioredis's own whose errors it drops).
 */
export async function tlsRefusalAt(
  url: string,
  tls: RedisTls | undefined,
  timeoutMs = 2_000,
): Promise<string | undefined> {
  const options = tlsOptions(tls);
  // All at once, so that silent seeds cost one timeout, not one each; the first refusal
  // in the URL's order is told.
  const refusals = await Promise.all(
    tlsEndpoints(url).map(async ({ host, port }) => {
      const err = await handshake(host, port, options, timeoutMs);
      return err === undefined ? undefined : tlsRefusal(err, `${host}:${port}`, options);
    }),
  );
  return refusals.find((refusal) => refusal !== undefined);
}

/** The endpoints a TLS `url` names: its host, its cluster's seeds or its sentinels; none when not TLS. */
function tlsEndpoints(url: string): readonly { host: string; port: number }[] {
  const target = parseRedisUrl(url);
  if (target.kind === "cluster") return target.tls ? target.seeds : [];
  if (target.kind === "sentinel") return target.tls ? target.sentinels : [];
  if (!url.startsWith("rediss:")) return [];
  const parsed = new URL(url);
  return [{ host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(parsed.port || 6379) }];
}

/**
 * Connects with TLS to `host:port` and sends a PING: answers the error that ended it
 * (a TLS 1.3 server refuses a client certificate after the handshake, on the first
 * read), or undefined once Redis answers, closes, or `timeoutMs` passes.
 */
function handshake(
  host: string,
  port: number,
  options: ConnectionOptions,
  timeoutMs: number,
): Promise<unknown> {
  return new Promise((resolve) => {
    const socket = connect({ ...options, host, port });
    let settled = false;
    const done = (err?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(err);
    };
    const timer = setTimeout(done, timeoutMs);
    socket.once("secureConnect", () => socket.write("PING\r\n"));
    socket.once("data", () => done());
    // `on`, not `once`: an alert may follow the first error, after the answer is known.
    socket.on("error", done);
    socket.once("close", () => done());
  });
}
