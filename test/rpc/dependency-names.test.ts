import { Code, ConnectError } from "@connectrpc/connect";
import { Redis } from "ioredis";
import { expect, test } from "vitest";
import { freePort } from "../../server/redis/redis-server-process.js";
import { hostCall, storeCall } from "../../server/rpc/errors.js";
import { connectErrorOf } from "../support/harness.js";

// A failure names what failed: Redis (the suggestion store) or the chat host, whichever
// call it came through. The embedded chat host keeps its chats in the same Redis.

/** The error a command gets from a client whose Redis is gone, as ioredis makes it. */
async function redisFailure(): Promise<unknown> {
  // A free port: nothing listens there.
  const port = await freePort();
  const client = new Redis({ port, enableOfflineQueue: false, lazyConnect: true });
  client.on("error", () => {});
  try {
    return await client.get("k").then(
      () => undefined,
      (err: unknown) => err,
    );
  } finally {
    client.disconnect();
  }
}

test("Redis failing under a host call is the suggestion store's failure", async () => {
  const failure = await redisFailure();
  expect(failure).toBeInstanceOf(Error);
  for (const call of [hostCall, storeCall]) {
    const err = await connectErrorOf(call(() => Promise.reject(failure)));
    expect([err.code, err.rawMessage]).toEqual([
      Code.Unavailable,
      "the suggestion store is unavailable",
    ]);
    expect(err.cause).toBe(failure);
  }
  for (const message of ["Command timed out", "Connection is closed."]) {
    const err = await connectErrorOf(hostCall(() => Promise.reject(new Error(message))));
    expect(err.rawMessage).toBe("the suggestion store is unavailable");
  }
  // Mapped already by a store call inside the host call: kept.
  const inner = await connectErrorOf(storeCall(() => Promise.reject(failure)));
  expect(await connectErrorOf(hostCall(() => Promise.reject(inner)))).toBe(inner);
});

test("the chat host's own failure still names the chat host", async () => {
  for (const failure of [
    new ConnectError("upstream connect error", Code.Unavailable),
    new ConnectError("deadline", Code.DeadlineExceeded),
    new Error("socket hang up"),
  ]) {
    const err = await connectErrorOf(hostCall(() => Promise.reject(failure)));
    expect([err.code, err.rawMessage]).toEqual([Code.Unavailable, "the chat host is unavailable"]);
  }
});
