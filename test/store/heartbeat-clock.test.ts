import { expect, test } from "vitest";
import { HeartbeatClock } from "../../server/store/heartbeat-clock.js";
import { HEARTBEAT, Watcher } from "../../server/store/watcher.js";

/** A target that counts its beats. */
function counter() {
  const target = { beats: 0, beat: () => target.beats++ };
  return target;
}

test("each target beats once a period while untouched; a touch postpones it; a removed one never beats", () => {
  const clock = new HeartbeatClock();
  const start = Date.now();
  const idle = counter();
  const busy = counter();
  const gone = counter();
  clock.add(idle, 5_000);
  const busyBeat = clock.add(busy, 5_000);
  clock.remove(clock.add(gone, 5_000));
  expect(clock.beating).toBe(2);

  clock.tick(start + 4_000);
  expect([idle.beats, busy.beats]).toEqual([0, 0]);
  // A message to `busy` at 4 s: its next beat is a period after that.
  clock.touch(busyBeat);
  clock.tick(start + 6_000);
  expect([idle.beats, busy.beats, gone.beats]).toEqual([1, 0, 0]);
  clock.tick(start + 10_000);
  expect([idle.beats, busy.beats]).toEqual([1, 1]);
  clock.tick(start + 12_000);
  expect([idle.beats, busy.beats]).toEqual([2, 1]);
  // Ticks that come late (a busy event loop) beat once, not once per missed period.
  clock.tick(start + 60_000);
  expect([idle.beats, busy.beats, gone.beats]).toEqual([3, 2, 0]);
});

test("the clock's timer runs only while something beats, and a target that throws harms no other", () => {
  const clock = new HeartbeatClock();
  const start = Date.now();
  const ok = counter();
  const a = clock.add(
    {
      beat() {
        throw new Error("a stream that cannot be written");
      },
    },
    5_000,
  );
  const b = clock.add(ok, 5_000);
  clock.tick(start + 6_000);
  expect(ok.beats).toBe(1);
  clock.remove(a);
  clock.remove(b);
  expect(clock.beating).toBe(0);
  clock.tick(start + 20_000);
  expect(ok.beats).toBe(1);
});

test("a watcher gives HEARTBEAT to a waiting reader and to a sink, never to one that has not taken the last", async () => {
  const clock = new HeartbeatClock();
  const start = Date.now();
  const read = new Watcher<string>();
  read.beatEvery(clock, 5_000);
  read.offer({ version: "1", value: "lists" });
  expect(await read.next()).toEqual({ done: false, value: "lists" });
  const waiting = read.next();
  clock.tick(start + 6_000);
  expect(await waiting).toEqual({ done: false, value: HEARTBEAT });
  // No reader waits: no heartbeat is queued for it.
  clock.tick(start + 12_000);
  read.offer({ version: "2", value: "newer" });
  expect(await read.next()).toEqual({ done: false, value: "newer" });

  const pushed = new Watcher<string>();
  pushed.beatEvery(clock, 5_000);
  const got: unknown[] = [];
  let accept = true;
  pushed.pushTo({
    push: (value) => {
      got.push(value);
      return accept;
    },
    end: () => {},
  });
  clock.tick(start + 18_000);
  expect(got).toEqual([HEARTBEAT]);
  // A sink that paused (a slow client) gets no heartbeat until it resumes.
  accept = false;
  clock.tick(start + 24_000);
  clock.tick(start + 30_000);
  expect(got).toEqual([HEARTBEAT, HEARTBEAT]);
  expect(clock.beating).toBe(2);
  read.end();
  pushed.end();
  expect(clock.beating).toBe(0);
});
