import type { Permission } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import type { StartSuggestionResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { type CallEnd, untilEnd } from "./call-end.js";

/**
 * Concurrent calls of one key on this instance joined into one flight: the first runs
 * `fn`, the others wait for its promise, so 50 concurrent Starts of one suggestion read
 * the host and the store once, not 50 times (the Redis lock still makes one holder
 * across instances). The flight runs without any caller's end, so one caller leaving
 * does not fail the others; each caller stops waiting when its own call ends.
 * Flights are forgotten as soon as they settle: memory holds only calls in flight.
 */
export class Flights<T> {
  readonly #flights = new Map<string, Promise<T>>();

  /** Keys in flight now (for tests). */
  get size(): number {
    return this.#flights.size;
  }

  /**
   * `fn`'s result, shared with every call of `key` that overlaps this one. `end` (the
   * function that reads the call's end) is called only by a call that joins a flight
   * already in the air: the caller that starts one awaits its own work, which its call's
   * deadline and the transport bound.
   */
  join(key: string, fn: () => Promise<T>, end?: () => CallEnd): Promise<T> {
    const flight = this.#flights.get(key);
    if (flight === undefined) {
      const started = fn().finally(() => {
        if (this.#flights.get(key) === started) this.#flights.delete(key);
      });
      this.#flights.set(key, started);
      return started;
    }
    return end === undefined ? flight : untilEnd(flight, end());
  }
}

/** What one flight of a Start found: its answer and the permission the chat inherits. */
export interface StartFlight {
  readonly response: StartSuggestionResponse;
  readonly inherited: Permission;
}

/**
 * The Start flights of one instance, keyed by (session, suggestion). Made once where the
 * instance is wired (server.ts) and handed to StartSuggestion, so that the Starts every
 * transport serves on this instance share them, and two instances in one process (the
 * tests run several) never do.
 */
export class StartFlights extends Flights<StartFlight> {}
