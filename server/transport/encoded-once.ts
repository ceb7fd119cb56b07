/**
 * The gRPC frames of frozen messages, encoded once. A frozen message (frozen in depth,
 * as the handlers that share one response among many calls make it) cannot change, so
 * its bytes can be reused by every call that answers it: the fast path's encoder looks
 * here before `toBinary`. Keyed weakly, so a frame lives as long as its message; the
 * transport knows nothing of what the messages are.
 */
const frames = new WeakMap<object, Buffer>();

/** The frame encoded for this frozen message earlier, if any. */
export function encodedFrame(message: object): Buffer | undefined {
  return frames.get(message);
}

/** Keeps the frame of a message, if the message is frozen (else it could change). */
export function keepFrame(message: object, frame: Buffer): void {
  if (Object.isFrozen(message)) frames.set(message, frame);
}
