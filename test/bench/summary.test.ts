import { expect, test } from "vitest";
import type { FanoutFigures } from "../../bench/extras.js";
import { extraRowsOf } from "../../bench/summary.js";

const fanout = (serverCpuUsPerMessage: number): FanoutFigures => ({
  watchers: 1_000,
  changes: 30,
  deliveredMessages: 30_000,
  medianDeliveryMs: 60,
  maxDeliveryMs: 120,
  serverCpuUsPerMessage,
  serverCores: 0.3,
  generatorCores: 0.9,
});

test("the watchers' line says the floor beside the service's figure, and the ratio to it", () => {
  const [line] = extraRowsOf({ fanout: fanout(18), fanoutFloor: fanout(12) }, [], 2);
  expect(line?.measure).toBe("a change reaching 1,000 watchers of one chat");
  expect(line?.figure).toMatch(/^18\.0 µs server CPU per delivered message \(30,000 messages/);
  expect(line?.figure).toContain(
    "; node:http2 alone, the same changes and generator (bench/fanout-floor.ts): 12.0 µs, so the service is 1.50× its floor",
  );
  expect(line?.met).toBe(false);
});

test("without a floor measured the line is the service's alone; within 10 µs it is met", () => {
  const [line] = extraRowsOf({ fanout: fanout(9.5) }, [], 2);
  expect(line?.figure).not.toContain("node:http2 alone");
  expect(line?.met).toBe(true);
});
