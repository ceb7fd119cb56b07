import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Cluster, Redis } from "ioredis";
import {
  type Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import { storeCondition } from "../redis/store-condition.js";

/**
 * grpc.health.v1: SERVING only while Redis answers and its condition has no problem (an
 * evicting `maxmemory-policy` found on a reconnection, a disk that refuses writes:
 * redis/store-condition.ts). Check pings Redis (bounded by a short timeout); Watch
 * reports at once and then after every change of the Redis connection's state or of
 * its condition, and ends when the server shuts down or the client leaves.
 * The empty service name and every served service are known; others are NOT_FOUND.
 */
export function createHealthService(
  redis: Redis | Cluster,
  services: readonly string[],
  pingTimeoutMs = 1_000,
): ServiceImpl<typeof Health> {
  const known = new Set(["", ...services]);
  const condition = storeCondition(redis);
  const requireKnown = (service: string) => {
    if (!known.has(service)) {
      throw new ConnectError(`unknown service "${service}"`, Code.NotFound);
    }
  };
  const ping = async (): Promise<Status> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<Status>((resolve) => {
      timer = setTimeout(() => resolve(Status.NOT_SERVING), pingTimeoutMs);
    });
    const answer = redis.ping().then(
      () => (condition.problems.size === 0 ? Status.SERVING : Status.NOT_SERVING),
      () => Status.NOT_SERVING,
    );
    return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
  };
  const current = () =>
    redis.status === "ready" && condition.problems.size === 0 ? Status.SERVING : Status.NOT_SERVING;
  return {
    async check(request) {
      requireKnown(request.service);
      return { status: await ping() };
    },
    async *watch(request, context) {
      if (!known.has(request.service)) {
        yield { status: Status.SERVICE_UNKNOWN };
        return;
      }
      let wake: (() => void) | undefined;
      let dirty = true;
      const onChange = () => {
        dirty = true;
        wake?.();
      };
      const events = ["ready", "close", "end", "reconnecting", "error"] as const;
      for (const e of events) redis.on(e, onChange);
      condition.on("change", onChange);
      context.signal.addEventListener("abort", onChange);
      try {
        let last: Status | undefined;
        for (;;) {
          if (!dirty) {
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
          }
          dirty = false;
          if (context.signal.aborted) return;
          const status = current();
          if (status !== last) {
            last = status;
            yield { status };
          }
        }
      } finally {
        for (const e of events) redis.off(e, onChange);
        condition.off("change", onChange);
        context.signal.removeEventListener("abort", onChange);
      }
    },
  };
}
