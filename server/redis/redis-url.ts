/** One seed address of a Redis Cluster. */
export interface ClusterSeed {
  readonly host: string;
  readonly port: number;
}

/**
 * Where Redis is, as `REDIS_URL` says: one server (`redis://`, `rediss://`, or
 * `unix:///<absolute path>` for its Unix socket), or a Redis Cluster (`redis+cluster://`,
 * `rediss+cluster://`) given by one or more seed nodes, from which the client learns
 * every node and slot.
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
    };

/** A `REDIS_URL` that names no Redis; the message says what is expected. */
export class RedisUrlError extends Error {
  override name = "RedisUrlError";
}

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#@]+)\/?$/;
const SEED = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/;

/**
 * Reads a Redis URL. A cluster is written as
 * `redis+cluster://[user:password@]host:port[,host:port...]`: the seeds are separated
 * by commas (an IPv6 address in brackets), and user and password are percent-encoded
 * and apply to every node. One URL for both modes keeps every other setting, the
 * harness and `spawnService` the same whichever Redis runs underneath.
 */
export function parseRedisUrl(raw: string): RedisTarget {
  const cluster = CLUSTER_URL.exec(raw);
  if (cluster === null) {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new RedisUrlError(`must be a URL (got "${raw}")`);
    }
    if (parsed.protocol === "unix:") return { kind: "single", url: raw, socket: socketPath(raw) };
    if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
      throw new RedisUrlError(
        `must start with redis:, rediss:, unix:, redis+cluster: or rediss+cluster: (got "${raw}")`,
      );
    }
    return { kind: "single", url: raw };
  }
  const scheme = cluster[1] as string;
  const userinfo = cluster[2];
  const hosts = cluster[3] as string;
  const seeds = hosts.split(",").map((entry) => {
    const seed = SEED.exec(entry.trim());
    const port = Number(seed?.[3]);
    if (seed === null || port < 1 || port > 65535) {
      throw new RedisUrlError(
        `must list cluster seeds as host:port separated by commas (got "${entry}" in "${redact(raw)}")`,
      );
    }
    return { host: (seed[1] ?? seed[2]) as string, port };
  });
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(":");
    const user = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
    username = user === "" ? undefined : user;
    password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1));
  }
  return { kind: "cluster", seeds, username, password, tls: scheme === "rediss" };
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
