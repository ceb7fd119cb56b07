import type { Socket } from "node:net";

/**
 * Counts the writes that reach a socket's own write functions (`_write`, `_writev`):
 * after any cork, so a corked turn's commands count once.
 */
export function countWrites(socket: Socket): { writes: number } {
  const counter = { writes: 0 };
  const internals = socket as unknown as {
    _write: (...a: unknown[]) => void;
    _writev: (...a: unknown[]) => void;
  };
  for (const name of ["_write", "_writev"] as const) {
    const original = internals[name];
    internals[name] = function (this: unknown, ...args: unknown[]) {
      counter.writes++;
      return original.apply(this, args);
    };
  }
  return counter;
}
