import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import type { ClusterOptions, RedisOptions } from "ioredis";
import { redact } from "./redis-url.js";
import { SentinelTlsConnector, TlsConnector } from "./tls-connector.js";

/**
 * TLS to Redis with a team's own certificates: the CA that signs Redis's certificate, a
 * client certificate for a Redis that asks for one, and the name to verify when nodes are
 * reached by address. Read and checked once, at start-up; every connection of every
 * `rediss` form (one server, a cluster's nodes, Sentinel's sentinels and data nodes)
 * takes the same options from here, so Node's own CA store and NODE_EXTRA_CA_CERTS are
 * never needed.
 */

/** The settings as the environment names them: file paths and a name, each optional. */
export interface RedisTlsFiles {
  /** REDIS_TLS_CA_FILE: a PEM bundle of the CAs that sign Redis's certificate. */
  readonly caFile?: string | undefined;
  /** REDIS_TLS_CERT_FILE: a PEM client certificate (with REDIS_TLS_KEY_FILE). */
  readonly certFile?: string | undefined;
  /** REDIS_TLS_KEY_FILE: the PEM private key of REDIS_TLS_CERT_FILE. */
  readonly keyFile?: string | undefined;
  /** REDIS_TLS_SERVERNAME: the name Redis's certificate must hold, whatever the address. */
  readonly servername?: string | undefined;
}

/** What the files hold, checked: the TLS options of every connection to Redis. */
export interface RedisTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly servername?: string;
}

/** Where Redis is and how to reach it: REDIS_URL and, for a `rediss` one, REDIS_TLS_*. */
export interface RedisSettings {
  readonly redisUrl: string;
  readonly redisTls?: RedisTls | undefined;
}

/** A TLS setting that cannot be used; the message names the variable. */
export class RedisTlsError extends Error {
  override name = "RedisTlsError";
}

/** The variables of `RedisTlsFiles`, in the order the messages name them. */
const VARIABLES = Object.freeze({
  caFile: "REDIS_TLS_CA_FILE",
  certFile: "REDIS_TLS_CERT_FILE",
  keyFile: "REDIS_TLS_KEY_FILE",
  servername: "REDIS_TLS_SERVERNAME",
} as const);

/** The URLs of TLS to Redis: `rediss://` and each `rediss+<mode>://`. */
const TLS_URL = /^rediss(?:\+[a-z]+)?:\/\//;

/**
 * Reads and checks the files of `files` for the Redis of `url` (REDIS_URL; undefined: the
 * private Redis), or answers undefined when none is set. A setting with a URL that is not
 * TLS (or with the private Redis, reached over its Unix socket) is refused rather than
 * ignored: the operator meant TLS, and would get none. Each other failure throws a
 * RedisTlsError naming the variable too: a file missing or unreadable, a CA
 * or certificate file with no PEM certificate (or one that does not parse), a key file
 * with no unencrypted PEM private key, a key that is not the certificate's, a certificate
 * without its key (or the reverse), a servername that is not a DNS name.
 */
export function readRedisTls(files: RedisTlsFiles, url: string | undefined): RedisTls | undefined {
  const { caFile, certFile, keyFile, servername } = files;
  const set = (Object.keys(VARIABLES) as (keyof RedisTlsFiles)[]).find(
    (field) => files[field] !== undefined,
  );
  if (set === undefined) return undefined;
  if (url === undefined || !TLS_URL.test(url)) {
    const got = url === undefined ? "is unset (the private Redis)" : `is "${redact(url)}"`;
    throw new RedisTlsError(
      `${VARIABLES[set]} is set, but REDIS_URL ${got}: TLS to Redis needs a rediss://, rediss+cluster:// or rediss+sentinel:// REDIS_URL`,
    );
  }
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new RedisTlsError("REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE must be set together");
  }
  if (servername !== undefined && !isDnsName(servername)) {
    throw new RedisTlsError(
      `REDIS_TLS_SERVERNAME must be a DNS name, as redis.internal (got "${servername}")`,
    );
  }
  const ca = caFile === undefined ? undefined : certificates("REDIS_TLS_CA_FILE", caFile).pem;
  let client: { cert: string; key: string } | undefined;
  if (certFile !== undefined && keyFile !== undefined) {
    const cert = certificates("REDIS_TLS_CERT_FILE", certFile);
    const key = privateKey("REDIS_TLS_KEY_FILE", keyFile);
    if (!(cert.first as X509Certificate).checkPrivateKey(key.object)) {
      throw new RedisTlsError(
        `REDIS_TLS_KEY_FILE ${keyFile} is not the private key of the certificate in REDIS_TLS_CERT_FILE ${certFile}`,
      );
    }
    client = { cert: cert.pem, key: key.pem };
  }
  return {
    ...(ca === undefined ? {} : { ca }),
    ...client,
    ...(servername === undefined ? {} : { servername }),
  };
}

/** Node's TLS options for one connection to Redis: Node's defaults where unset. */
export function tlsOptions(tls: RedisTls | undefined): ConnectionOptions {
  return { ...tls };
}

/**
 * One Redis's TLS options (`rediss://`): `tls`, on connections that survive every error
 * their socket emits (redis/tls-connector.ts).
 */
export function singleTlsOptions(
  tls: RedisTls | undefined,
): Pick<RedisOptions, "tls" | "Connector"> {
  return { tls: tlsOptions(tls), Connector: TlsConnector };
}

/**
 * A cluster's TLS options: every node's connection takes `singleTlsOptions`, and seed hosts are
 * connected to by the name written in REDIS_URL rather than the address it resolves to
 * (ioredis resolves them by default), so that a certificate naming that host verifies.
 * Nodes the cluster announces by IP are verified against REDIS_TLS_SERVERNAME when set.
 */
export function clusterTlsOptions(tls: RedisTls | undefined): Pick<ClusterOptions, "dnsLookup"> & {
  readonly redisOptions: Pick<RedisOptions, "tls" | "Connector">;
} {
  return {
    dnsLookup: (address, callback) => callback(null, address),
    redisOptions: singleTlsOptions(tls),
  };
}

/**
 * Sentinel's TLS options (`rediss+sentinel://`): the same options to the sentinels and
 * to the data nodes they name, on connections that survive every error their socket
 * emits (redis/tls-connector.ts `SentinelTlsConnector`).
 */
export function sentinelTlsOptions(
  tls: RedisTls | undefined,
): Pick<RedisOptions, "tls" | "sentinelTLS" | "enableTLSForSentinelMode" | "Connector"> {
  return {
    tls: tlsOptions(tls),
    sentinelTLS: tlsOptions(tls),
    enableTLSForSentinelMode: true,
    Connector: SentinelTlsConnector,
  };
}

/** The PEM certificates of `file`: at least one, each parsed. */
function certificates(name: string, file: string): { pem: string; first: X509Certificate } {
  const text = readText(name, file);
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (blocks === null) throw new RedisTlsError(`${name} ${file} holds no PEM certificate`);
  const parsed = blocks.map((block) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new RedisTlsError(
        `${name} ${file} holds a PEM certificate that does not parse (${(err as Error).message})`,
      );
    }
  });
  return { pem: text, first: parsed[0] as X509Certificate };
}

/** The unencrypted PEM private key of `file`. */
function privateKey(name: string, file: string): { pem: string; object: KeyObject } {
  const text = readText(name, file);
  try {
    return { pem: text, object: createPrivateKey({ key: text, format: "pem" }) };
  } catch (err) {
    throw new RedisTlsError(
      `${name} ${file} holds no unencrypted PEM private key (${(err as Error).message})`,
    );
  }
}

function readText(name: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new RedisTlsError(`${name} ${file} cannot be read (${(err as Error).message})`);
  }
}

/** A host name of letters, digits and hyphens in dot-separated labels; no address. */
function isDnsName(name: string): boolean {
  return (
    isIP(name) === 0 &&
    name.length <= 253 &&
    /^(?=.*[A-Za-z])[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(
      name,
    )
  );
}
