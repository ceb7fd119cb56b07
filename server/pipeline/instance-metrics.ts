import { Counter, Gauge, type Registry } from "prom-client";

/** What the instance's own series read, each time /metrics is scraped. */
export interface InstanceState {
  /** Watch streams open now. */
  watchers(): number;
  /** Whether this instance should be sent calls now (`GET /readyz` 200). */
  ready(): boolean;
}

/**
 * The instance's own series on /metrics, beside the calls' (pipeline/telemetry.ts):
 * `suggest_watchers`, `suggest_ready` (1 or 0: what the deployment's readiness alerts
 * read) and `suggest_start_lock_lapses_total` (Starts that waited out another caller's
 * lock without hearing its result: the holder died or stalled, and the waiter took
 * over). Registered in the server's own registry; answers how to count a lapse.
 */
export function instanceMetrics(
  registry: Registry,
  state: InstanceState,
): { readonly startLockLapsed: () => void } {
  new Gauge({
    name: "suggest_watchers",
    help: "Watch streams open now.",
    registers: [registry],
    collect() {
      this.set(state.watchers());
    },
  });
  new Gauge({
    name: "suggest_ready",
    help: "1 while this instance should be sent calls (GET /readyz answers 200), else 0.",
    registers: [registry],
    collect() {
      this.set(state.ready() ? 1 : 0);
    },
  });
  const lapses = new Counter({
    name: "suggest_start_lock_lapses_total",
    help: "Start locks waited out without the holder's result (it died or stalled); the waiter takes over.",
    registers: [registry],
  });
  return { startLockLapsed: () => lapses.inc() };
}
