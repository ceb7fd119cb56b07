import type { Redis } from "ioredis";
import { replicaProblem } from "./store-checks.js";
import { storeCondition } from "./store-condition.js";

/** How often a primary short of replicas is asked again. */
export const REPLICAS_RECHECK_MS = 1_000;

/**
 * The start's other checks, run again on the primary each time the client's connection
 * is ready again, where that primary may be another server: a client of Redis Sentinel
 * after a failover (the eviction policy is checked on every reconnection already,
 * store-checks.ts `watchEvictionPolicy`). With `waitReplicas` above 0, a primary with
 * fewer replicas online makes the problem `replicas` (readiness NOT_SERVING, every write
 * failing UNAVAILABLE meanwhile), asked again every `REPLICAS_RECHECK_MS` until gone:
 * the sentinels reattach the other replicas to a promoted one within moments. A primary
 * whose last AOF write or snapshot failed (`INFO persistence`) makes the problem `disk`
 * (store-condition.ts). Returns the stop.
 */
export function watchFailoverChecks(client: Redis, waitReplicas: number): () => void {
  const condition = storeCondition(client);
  let timer: NodeJS.Timeout | undefined;
  let checking = false;
  let again = false;
  let stopped = false;
  const check = async () => {
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    clearTimeout(timer);
    try {
      do {
        again = false;
        condition.set("replicas", await replicaProblem(client, waitReplicas));
        const disk = diskFailure(await client.info("persistence"));
        if (disk !== undefined) condition.diskRefuses(disk);
      } while (again);
    } catch {
      // Redis not answering: checked again on the next reconnection.
    } finally {
      checking = false;
    }
    if (!stopped && condition.problems.has("replicas")) {
      timer = setTimeout(() => void check(), REPLICAS_RECHECK_MS).unref();
    }
  };
  const onReady = () => void check();
  client.on("ready", onReady);
  return () => {
    stopped = true;
    clearTimeout(timer);
    client.off("ready", onReady);
  };
}

/** What `INFO persistence` says failed last, or undefined when its writes are ok. */
function diskFailure(info: string): string | undefined {
  if (/^aof_last_write_status:err/m.test(info)) return "its last AOF write failed";
  if (/^rdb_last_bgsave_status:err/m.test(info)) return "its last snapshot failed";
  return undefined;
}
