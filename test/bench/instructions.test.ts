import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import {
  dumpTotal,
  gcInstructions,
  startCounted,
  valgrindVersion,
} from "../../bench/instructions.js";
import { freePort } from "../../server/redis/redis-server-process.js";

test("a callgrind dump's total is its summary line", () => {
  const dump = [
    "version: 1",
    "creator: callgrind-3.19.0",
    "events: Ir",
    "summary: 899262669",
    "",
    "fn=(1) main",
    "0 5",
    "totals: 899262851",
  ].join("\n");
  expect(dumpTotal(dump)).toBe(899262669);
  expect(() => dumpTotal("events: Ir\nfn=(1) main\n")).toThrow(
    "a callgrind dump without a summary line",
  );
});

test("the instructions of a dump's garbage collections are Heap::CollectGarbage's, inclusive", () => {
  const annotated = [
    "Ir",
    "--------------------------------------------------------------------------------",
    "1,350,054,002 (100.0%)  PROGRAM TOTALS",
    "",
    "--------------------------------------------------------------------------------",
    "Ir                    file:function",
    "--------------------------------------------------------------------------------",
    "1,101,203,004 (81.57%)  ???:Builtins_JSEntry [/usr/bin/node]",
    "  142,455,784 (10.55%)  ???:v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags) [/usr/bin/node]",
    "  108,314,629 ( 8.02%)  ???:v8::internal::ScavengerCollector::CollectGarbage() [/usr/bin/node]",
  ].join("\n");
  expect(gcInstructions(annotated)).toBe(142_455_784);
  expect(gcInstructions("1,000 (100.0%)  PROGRAM TOTALS\n900 (90.00%)  ???:main [a.out]")).toBe(0);
});

/** A guest that answers each byte it reads after a loop of the same work every time. */
const GUEST = `
const net = require("node:net");
let kept = [];
net.createServer((socket) => socket.on("data", (data) => {
  for (const byte of data) {
    // "g": a burst of short-lived objects, so that V8 collects garbage while counted.
    if (byte === 103) {
      for (let i = 0; i < 200000; i++) kept.push({ i, s: String(i) });
      kept = [];
    }
    let x = 0;
    for (let i = 0; i < 300000; i++) x = (x + i * 7) | 0;
    socket.write(String(x & 1));
  }
})).listen(Number(process.env.PORT), "127.0.0.1", () => console.log("ready"));
`;

/** Why the callgrind test is skipped, or undefined when valgrind is installed. */
const skipReason =
  valgrindVersion() === undefined
    ? "valgrind is missing: install Debian's valgrind package (apt-get install -y valgrind), as .ci/run does"
    : undefined;

// The bench's instruction counts (bench/instructions.ts) rest on this: between the marks
// of `count` the guest's instructions are counted, and only then.
test.skipIf(skipReason !== undefined)(
  `instructions are counted only while \`count\` runs, in proportion to the work${skipReason === undefined ? "" : ` (skipped: ${skipReason})`}`,
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "instructions-test-"));
    const port = await freePort();
    const guest = await startCounted(dir, ["-e", GUEST], { PORT: String(port) }, /ready/);
    const socket = net.connect(port, "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    const requests = async (n: number, byte = "x") => {
      for (let i = 0; i < n; i++) {
        socket.write(byte);
        await new Promise((resolve) => socket.once("data", resolve));
      }
    };
    try {
      await requests(50);
      const ten = await guest.counted.count(() => requests(10));
      await requests(20); // uncounted
      const thirty = await guest.counted.count(() => requests(30));
      const none = await guest.counted.count(async () => {});
      const garbage = await guest.counted.count(() => requests(5, "g"));
      // Each request is a loop of 300,000 additions: about a million instructions.
      expect(ten.main / 10).toBeGreaterThan(600_000);
      expect(ten.all).toBeGreaterThanOrEqual(ten.main);
      expect(thirty.main / ten.main).toBeGreaterThan(2.7);
      expect(thirty.main / ten.main).toBeLessThan(3.3);
      expect(none.all).toBeLessThan(ten.main / 10);
      // The loops allocate next to nothing; the bursts of objects are collected while counted.
      expect(ten.mainGc).toBeLessThan(ten.main / 10);
      expect(garbage.mainGc).toBeGreaterThan(0);
      expect(garbage.mainGc).toBeLessThan(garbage.main);
    } finally {
      socket.destroy();
      await guest.process.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
  120_000,
);
