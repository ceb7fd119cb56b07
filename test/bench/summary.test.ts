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

const phase = (heartbeatSeconds: number, serverCores: number, serverRssMb: number) => ({
  watchers: 10_000,
  heartbeatSeconds,
  windowMs: 30_000,
  heartbeatsInWindow: heartbeatSeconds === 0 ? 0 : 20_000,
  failed: 0,
  firstError: undefined,
  serverCpuSeconds: serverCores * 30,
  serverCores,
  windowSeconds: 30,
  serverRssMb,
});

test("the heartbeats' lines: CPU with them against 2 % of a core, memory within 10 % of without", () => {
  const [cpu, memory] = extraRowsOf(
    { heartbeats: { without: phase(0, 0.002, 400), with: phase(15, 0.012, 430) } },
    [],
    2,
  );
  expect(cpu?.figure).toBe(
    "1.20 % of a core over 30.0 s (20,000 heartbeats delivered), 0.20 % without heartbeats (30.0 s, an instance of its own): heartbeats add 1.00 %",
  );
  expect(cpu?.met).toBe(true);
  expect(memory?.figure).toMatch(/^430 vs 400 MB RSS \(1\.075×\)/);
  expect(memory?.met).toBe(true);
  const [over, grown] = extraRowsOf(
    { heartbeats: { without: phase(0, 0.002, 400), with: phase(15, 0.03, 450) } },
    [],
    2,
  );
  expect(over?.met).toBe(false);
  expect(grown?.met).toBe(false);
});

test("the retry layer's line: the ratio of the medians against 1.05×", () => {
  const result = (withRetryUs: number) => ({
    rounds: 12,
    callsPerRound: 3_000,
    withRetryUs,
    withoutRetryUs: 100,
    ratio: withRetryUs / 100,
    roundsWithUs: [],
    roundsWithoutUs: [],
    layerUs: 0.5,
  });
  const [line] = extraRowsOf({ retryLayer: result(102) }, [], 2);
  expect(line?.figure).toBe(
    "102.0 vs 100.0 µs per call (medians of 12 rounds of 3,000 calls each, in alternating order; the median of the rounds' ratios 1.020×); the layer itself, in process: 0.50 µs a call, 0.50 % of a call without it",
  );
  expect(line?.met).toBe(true);
  expect(extraRowsOf({ retryLayer: result(106) }, [], 2)[0]?.met).toBe(false);
});
