import { Code } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { connectTimeout, grpcTimeout, MAX_TIMER_MS } from "../../server/transport/call-timeout.js";

/** What a header reads as: the time left, or the error's code and text. */
function read(timeout: ReturnType<typeof grpcTimeout>): unknown {
  if (timeout.error === undefined) return timeout.timeoutMs;
  return [Code[timeout.error.code], timeout.error.rawMessage];
}

describe("grpc-timeout", () => {
  test.each([
    [null, undefined],
    ["1m", 1],
    ["5S", 5000],
    ["2M", 120_000],
    ["1H", 3_600_000],
    ["1000u", 1],
    ["99999999H", MAX_TIMER_MS],
  ])("%j: served with %j ms", (value, ms) => {
    expect(read(grpcTimeout(value))).toBe(ms);
  });

  test.each(["0n", "0u", "0m", "0S", "0M", "0H", "999999n", "999u"])(
    "%j has passed on arrival: DEADLINE_EXCEEDED",
    (value) => {
      expect(read(grpcTimeout(value))).toEqual(["DeadlineExceeded", "the operation timed out"]);
    },
  );

  test.each(["", " ", "S", "1", "1s", "1.5S", "-1S", "+1S", "123456789S", "1S ", "1 S"])(
    "%j is INVALID_ARGUMENT naming the value as received",
    (value) => {
      expect(read(grpcTimeout(value))).toEqual([
        "InvalidArgument",
        `invalid grpc-timeout header "${value}"`,
      ]);
    },
  );
});

describe("connect-timeout-ms", () => {
  test("0 has passed; a malformed value keeps connect's text; a long one is held", () => {
    expect(read(connectTimeout("0"))).toEqual(["DeadlineExceeded", "the operation timed out"]);
    expect(read(connectTimeout("250"))).toBe(250);
    expect(read(connectTimeout("9999999999"))).toBe(MAX_TIMER_MS);
    expect(read(connectTimeout("-5"))).toEqual([
      "InvalidArgument",
      "protocol error: invalid connect timeout value: -5",
    ]);
    expect(read(connectTimeout(null))).toBeUndefined();
  });
});
