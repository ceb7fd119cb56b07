/** One address of a list: a seed of a Redis Cluster, or a sentinel. */
export interface ClusterSeed {
  readonly host: string;
  readonly port: number;
}

/**
 * Where Redis is, as `REDIS_URL` says: one server (`redis://`, `rediss://`, or
 * `unix:///<absolute path>` for its Unix socket), a Redis Cluster (`redis+cluster://`,
 * `rediss+cluster://`) given by one or more seed nodes, from which the client learns
 * every node and slot, or the primary that Redis Sentinel names (`redis+sentinel://`,
 * `rediss+sentinel://`), given by one or more sentinels and the master's name.
 */
export type RedisTarget =
  | {
      readonly kind: "single";
      readonly url: string;
      /** `unix://`: the path of the server's Unix socket. */
      readonly socket?: string;
    }
  | {
      readonly kind: "cluster";
      readonly seeds: readonly ClusterSeed[];
      readonly username: string | undefined;
      readonly password: string | undefined;
      /** `rediss+cluster://`: TLS to every node. */
      readonly tls: boolean;
    }
  | {
      readonly kind: "sentinel";
      readonly sentinels: readonly ClusterSeed[];
      /** The master's name in the sentinels' configuration (`sentinel monitor <name> ...`). */
      readonly name: string;
      /** The data nodes' credentials (the sentinels' own are REDIS_SENTINEL_*). */
      readonly username: string | undefined;
      readonly password: string | undefined;
      /** `rediss+sentinel://`: TLS to the sentinels and to the data nodes. */
      readonly tls: boolean;
    };

/** A `REDIS_URL` that names no Redis; the message says what is expected. */
export class RedisUrlError extends Error {
  override name = "RedisUrlError";
}

const LIST_URL = /^(rediss?)\+(cluster|sentinel):\/\/(?:([^@/]*)@)?([^/?#@]*)(.*)$/s;
const SEED = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/;

/**
 * Reads a Redis URL. A cluster is written as
 * `redis+cluster://[user:password@]host:port[,host:port...]`, Sentinel as
 * `redis+sentinel://[user:password@]host:port[,host:port...]/<master-name>`: the
 * addresses (seeds, sentinels) are separated by commas (an IPv6 address in brackets),
 * and user and password are percent-encoded and apply to every data node (the sentinels'
 * own are REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD). One URL for every mode
 * keeps every other setting, the harness and `spawnService` the same whichever Redis
 * runs underneath.
 */
export function parseRedisUrl(raw: string): RedisTarget {
  const list = LIST_URL.exec(raw);
  if (list === null) return singleTarget(raw);
  const scheme = list[1] as string;
  const mode = list[2] as "cluster" | "sentinel";
  const [username, password] = credentials(list[3], raw);
  const addresses = (list[4] as string).split(",").map((entry) => address(entry, mode, raw));
  const tail = list[5] as string;
  const tls = scheme === "rediss";
  if (mode === "cluster") {
    if (tail !== "" && tail !== "/") {
      throw new RedisUrlError(
        `must list cluster seeds as host:port separated by commas, and nothing after them (got "${redact(raw)}")`,
      );
    }
    return { kind: "cluster", seeds: addresses, username, password, tls };
  }
  const name = MASTER_NAME.exec(tail)?.[1];
  if (name === undefined) {
    throw new RedisUrlError(
      `must name the master after the sentinels, as ${scheme}+sentinel://host:26379/mymaster (got "${redact(raw)}")`,
    );
  }
  return {
    kind: "sentinel",
    sentinels: addresses,
    name: decoded(name, raw),
    username,
    password,
    tls,
  };
}

/** The master's name: one path segment, no query, no fragment. */
const MASTER_NAME = /^\/([^/?#\s]+)$/;

/** `redis://`, `rediss://` or `unix://`: one server. */
function singleTarget(raw: string): RedisTarget {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new RedisUrlError(`must be a URL (got "${raw}")`);
  }
  if (parsed.protocol === "unix:") return { kind: "single", url: raw, socket: socketPath(raw) };
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new RedisUrlError(
      `must start with redis:, rediss:, unix:, redis+cluster:, rediss+cluster:, redis+sentinel: or rediss+sentinel: (got "${redact(raw)}")`,
    );
  }
  return { kind: "single", url: raw };
}

/** One `host:port` of a cluster's seeds or of the sentinels. */
function address(entry: string, mode: "cluster" | "sentinel", raw: string): ClusterSeed {
  const seed = SEED.exec(entry.trim());
  const port = Number(seed?.[3]);
  if (seed === null || port < 1 || port > 65535) {
    const what = mode === "cluster" ? "cluster seeds" : "sentinels";
    throw new RedisUrlError(
      `must list ${what} as host:port separated by commas (got "${entry}" in "${redact(raw)}")`,
    );
  }
  return { host: (seed[1] ?? seed[2]) as string, port };
}

/** The percent-encoded `user:password` before the addresses; an empty user is none. */
function credentials(
  userinfo: string | undefined,
  raw: string,
): [string | undefined, string | undefined] {
  if (userinfo === undefined) return [undefined, undefined];
  const colon = userinfo.indexOf(":");
  const user = decoded(colon < 0 ? userinfo : userinfo.slice(0, colon), raw);
  return [
    user === "" ? undefined : user,
    colon < 0 ? undefined : decoded(userinfo.slice(colon + 1), raw),
  ];
}

/** A percent-encoded part of the URL, decoded; a bad `%` sequence is the URL's error. */
function decoded(part: string, raw: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new RedisUrlError(
      `must percent-encode its user, password and master name (got "${redact(raw)}")`,
    );
  }
}

const UNIX_URL = /^unix:\/\/(\/[^?#]+)$/;

/**
 * The socket of `unix:///<absolute path>`: no host, no credentials, no query (a socket
 * that needs a password is named with `redis://` instead, or guarded by its file
 * permissions, as the private redis-server's is).
 */
function socketPath(raw: string): string {
  const match = UNIX_URL.exec(raw);
  if (match === null) {
    throw new RedisUrlError(
      `must name a Unix socket by its absolute path, as unix:///var/run/redis.sock (got "${raw}")`,
    );
  }
  return decodeURIComponent(match[1] as string);
}

/** A Redis URL with its password replaced by `***`, for logs. */
export function redact(raw: string): string {
  return raw.replace(/^([a-z+]+:\/\/[^:@/]*:)[^@/]*@/, "$1***@");
}
