import { Cluster } from "ioredis";
import type { RedisClient } from "../../server/redis/redis-client.js";

/** One key of Redis with every byte of its value, as text. */
export interface DumpedKey {
  readonly key: string;
  readonly type: string;
  /**
   * The value's parts (fields, members, scores, stream ids and fields) joined by newlines;
   * a hash's fields and a set's members sorted.
   */
  readonly value: string;
}

/** A value's parts as text (bytes read as UTF-8, as the service writes its text). */
function text(parts: readonly (Buffer | string | readonly unknown[])[]): string {
  return parts
    .map((p) => (Array.isArray(p) ? text(p as (Buffer | string)[]) : String(p)))
    .join("\n");
}

/**
 * Every key on the Redis (every primary of a cluster) and its whole value, whatever its
 * type: SCAN, never KEYS. What an erasure test searches for a chat's id and text.
 */
export async function dumpRedis(redis: RedisClient): Promise<DumpedKey[]> {
  const dumped: DumpedKey[] = [];
  for (const node of redis instanceof Cluster ? redis.nodes("master") : [redis]) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "COUNT", 1000);
      cursor = next;
      for (const key of keys) {
        const type = await node.type(key);
        let parts: (Buffer | string | readonly unknown[])[] = [];
        if (type === "string") parts = [(await node.getBuffer(key)) ?? ""];
        // A hash's fields and a set's members in sorted order: the server's order is its
        // table's, which may change without a write (Valkey 8 rehashes as it reads).
        else if (type === "hash")
          parts = Object.entries(await node.hgetallBuffer(key))
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .flat();
        else if (type === "list") parts = await node.lrangeBuffer(key, 0, -1);
        else if (type === "set") parts = (await node.smembersBuffer(key)).sort(Buffer.compare);
        else if (type === "zset") parts = await node.zrangeBuffer(key, 0, -1, "WITHSCORES");
        else if (type === "stream") parts = await node.xrangeBuffer(key, "-", "+");
        else if (type !== "none") throw new Error(`key ${key} is of a type not read: ${type}`);
        dumped.push({ key, type, value: text(parts) });
      }
    } while (cursor !== "0");
  }
  return dumped;
}

/** The keys whose name or value holds any of `needles`, with the needles each holds. */
export async function keysHolding(
  redis: RedisClient,
  needles: readonly string[],
): Promise<{ key: string; holds: string[] }[]> {
  return (await dumpRedis(redis)).flatMap(({ key, value }) => {
    const holds = needles.filter((n) => key.includes(n) || value.includes(n));
    return holds.length === 0 ? [] : [{ key, holds }];
  });
}
