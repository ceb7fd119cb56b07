import { Redis } from "ioredis";
import { TlsConnector } from "./tls-connector.js";

/** How long a lost sentinel's subscription waits before it is made again. */
export const SENTINEL_RESUBSCRIBE_MS = 1_000;

/**
 * Calls `onSwitch` each time a sentinel of `client` (a client of the sentinels,
 * redis/redis-sentinel.ts) announces a new primary for its master (`+switch-master`):
 * one subscriber connection per sentinel, with the client's credentials and TLS for
 * sentinels (on connections that survive every error their socket emits,
 * redis/tls-connector.ts). A failover the service must follow at once although the old
 * primary still answers (a forced one, `SENTINEL FAILOVER`, or a primary cut off from
 * the sentinels): the sentinels turn the old primary into a replica only some seconds
 * later, and until then its connections would write where no replica confirms and
 * nothing is kept. Returns the stop.
 */
export function watchSwitches(client: Redis, onSwitch: () => void): () => void {
  const { sentinels, name, sentinelUsername, sentinelPassword, sentinelTLS } = client.options;
  const watchers = (sentinels ?? []).map((sentinel) => {
    const watcher = new Redis({
      host: sentinel.host ?? "127.0.0.1",
      port: sentinel.port ?? 26379,
      ...(sentinelUsername ? { username: sentinelUsername } : {}),
      ...(sentinelPassword ? { password: sentinelPassword } : {}),
      ...(sentinelTLS ? { tls: sentinelTLS, Connector: TlsConnector } : {}),
      connectionName: "suggest-task-switches",
      enableReadyCheck: false,
      disableClientInfo: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => SENTINEL_RESUBSCRIBE_MS,
    });
    // A sentinel down is the sentinels' concern; the others still tell.
    watcher.on("error", () => {});
    watcher.on("message", (_channel: string, message: string) => {
      // "<master name> <old ip> <old port> <new ip> <new port>"
      if (message.split(" ")[0] === name) onSwitch();
    });
    watcher.subscribe("+switch-master").catch(() => {});
    return watcher;
  });
  return () => {
    for (const watcher of watchers) watcher.disconnect();
  };
}
