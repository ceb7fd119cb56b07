/**
 * The protocol of StartSuggestion's single-flight lock, in one place: its settings and
 * their defaults, the results a holder reports, and the format of the message through
 * which waiters hear them (lua/releaseLock-2.lua publishes it). The holder
 * (held-start-lock.ts) writes it and the waiters (start-locks.ts) read it; both import
 * this file and not each other.
 */

/** How a Start's single-flight lock behaves. */
export interface StartLockSettings {
  /** The lock's lifetime in ms; its holder renews it every third of that. */
  readonly ttlMs: number;
  /**
   * The longest a holder keeps renewing, in ms. A holder stuck longer (a host that hangs,
   * a paused process) lets the lock lapse so that another caller can finish the Start;
   * the downstream calls are idempotent, so both still make one chat with one brief
   * (test/rpc/start-stall.test.ts).
   */
  readonly maxHoldMs: number;
}

/** The defaults, frozen: the service's settings (config.ts) start from these. */
export const defaultStartLockSettings: Readonly<StartLockSettings> = Object.freeze({
  // Short, so that a holder that dies stops blocking the others within about 1.5 s; its
  // renewals every 500 ms leave room for two lost ones (test/e2e/start-crash.test.ts).
  ttlMs: 1_500,
  maxHoldMs: 60_000,
});

/**
 * How a holder's Start ended, as it tells the callers waiting for it: `delivered` (the
 * suggestion is started and its brief posted) or `released` (it stopped without that:
 * the suggestion was no longer open, or a call failed), so a waiter checks again.
 */
export type StartResult = "delivered" | "released";

/** The message on the session's start-results channel: `<suggestion_id> <result>`. */
export function startResultMessage(suggestionId: string, result: StartResult): string {
  return `${suggestionId} ${result}`;
}

/** Reads a start-results message; undefined when it is not one. */
export function parseStartResult(
  message: string,
): { readonly suggestionId: string; readonly result: StartResult } | undefined {
  const space = message.lastIndexOf(" ");
  if (space < 0) return undefined;
  const result = message.slice(space + 1);
  if (result !== "delivered" && result !== "released") return undefined;
  return { suggestionId: message.slice(0, space), result };
}
