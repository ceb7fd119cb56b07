import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import type { Readiness } from "./readiness.js";

/** The codes with which the server itself ends a health Watch: its shutdown, the deadline. */
const SERVER_ENDS: ReadonlySet<Code> = new Set([Code.DeadlineExceeded, Code.Unavailable]);

/**
 * grpc.health.v1 with the instance's readiness (rpc/readiness.ts): SERVING while Redis
 * answers and no drain has begun, NOT_SERVING from the moment SIGTERM comes. Check asks
 * Redis (a PING bounded by a short timeout); Watch reports at once and then after every
 * change of the Redis connection's state or the drain's start. A Watch the server ends
 * (shutdown, deadline) ends with that status, UNAVAILABLE for the shutdown, never OK.
 * The empty service name and every served service are known; others are NOT_FOUND.
 * Pinned by test/e2e/probes.test.ts and test/e2e/interop-grpc.test.ts.
 */
export function createHealthService(
  readiness: Readiness,
  services: readonly string[],
): ServiceImpl<typeof Health> {
  const known = new Set(["", ...services]);
  const requireKnown = (service: string) => {
    if (!known.has(service)) {
      throw new ConnectError(`unknown service "${service}"`, Code.NotFound);
    }
  };
  const current = () => (readiness.current() === undefined ? Status.SERVING : Status.NOT_SERVING);
  return {
    async check(request) {
      requireKnown(request.service);
      return {
        status: (await readiness.check()) === undefined ? Status.SERVING : Status.NOT_SERVING,
      };
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
      const dropChange = readiness.onChange(onChange);
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
          if (context.signal.aborted) {
            const reason: unknown = context.signal.reason;
            if (reason instanceof ConnectError && SERVER_ENDS.has(reason.code)) throw reason;
            return;
          }
          const status = current();
          if (status !== last) {
            last = status;
            yield { status };
          }
        }
      } finally {
        dropChange();
        context.signal.removeEventListener("abort", onChange);
      }
    },
  };
}
