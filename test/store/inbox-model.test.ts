import { timestampMs } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { rebuildInboxes } from "../../server/store/inbox-rebuild.js";
import { sessionKeys, workspaceKeys } from "../../server/store/keys.js";
import { type OfferOutcome, SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { ownRedis, redisClient, uniqueId } from "../support/harness.js";

/*
 * A model-based test of the workspace inbox: random offers, settlements and restores in
 * six chats of two workspaces (chats also move between workspaces), with crashes
 * injected between the steps of a write (the writer dies after announcing its chat,
 * before appending), writers paused between the two steps while reads go on (their
 * tokens get fenced, so they must announce again), the index deleted and rebuilt from
 * the logs, and projections deleted. After every step each workspace's inbox, read page
 * by page, must be exactly the union of its chats' open offers, newest offer first.
 */

type Standing = "open" | "started" | "drafted" | "dismissed";

interface Offer {
  readonly sessionId: string;
  readonly id: string;
  readonly workspaceId: string;
  /** Its place in its chat's offer order (1, 2, ...). */
  readonly position: number;
  readonly offeredAt: number;
  state: Standing;
}

/** An inbox whose next announcement can kill its writer or pause it. */
class FaultyInbox extends WorkspaceInbox {
  next: "none" | "die" | "pause" = "none";
  gate: Promise<void> = Promise.resolve();
  override async announce(workspaceId: string, sessionId: string, minimum = 0): Promise<number> {
    const token = await super.announce(workspaceId, sessionId, minimum);
    const fault = this.next;
    this.next = "none";
    if (fault === "die") throw new Error("the writer died between announcing and appending");
    if (fault === "pause") await this.gate;
    return token;
  }
}

class Model {
  readonly offers: Offer[] = [];
  readonly workspaceOf: string[];
  paused: { chat: number; promise: Promise<OfferOutcome | Error>; resume: () => void } | undefined;
  turn = 0;
  constructor(
    readonly sessions: readonly string[],
    readonly workspaces: readonly [string, string],
  ) {
    this.workspaceOf = sessions.map((_, i) => workspaces[i % 2] as string);
  }
  of(chat: number) {
    return this.offers.filter((o) => o.sessionId === this.sessions[chat]);
  }
}

interface Real {
  readonly store: SuggestionStore;
  readonly inbox: FaultyInbox;
}

let redisServer: RedisServerProcess & { remove: () => void };
let admin: RedisClient;
beforeAll(async () => {
  redisServer = await ownRedis();
  admin = redisClient(redisServer.url);
});
afterAll(async () => {
  admin.disconnect();
  await redisServer.stop();
  redisServer.remove();
});

/** The inbox's order: newest offer first, then by session id, then later in the chat first. */
function newestFirst(a: Offer, b: Offer): number {
  if (a.offeredAt !== b.offeredAt) return b.offeredAt - a.offeredAt;
  if (a.sessionId !== b.sessionId) return a.sessionId < b.sessionId ? 1 : -1;
  return b.position - a.position;
}

/** Each workspace's inbox, every page of it, equals the model's open offers of it. */
async function compare(m: Model, r: Real, pageSize: number): Promise<void> {
  for (const workspaceId of m.workspaces) {
    const expected = m.offers
      .filter((o) => o.workspaceId === workspaceId && o.state === "open")
      .sort(newestFirst)
      .map((o) => `${o.sessionId}/${o.id}`);
    const got: string[] = [];
    let after = "";
    for (let i = 0; i < 50; i++) {
      const page = await r.store.inbox.page(workspaceId, pageSize, after);
      expect(page.entries.length).toBeLessThanOrEqual(pageSize);
      for (const { suggestion: s } of page.entries) {
        expect(s.state).toBe(SuggestionState.OPEN);
        expect(s.workspaceId).toBe(workspaceId);
        got.push(`${s.sessionId}/${s.id}`);
      }
      after = page.next;
      if (after === "") break;
    }
    expect(got).toEqual(expected);
  }
}

/** Applies what an offer answered, checking it against the model's quotas. */
function applyOffer(m: Model, chat: number, workspaceId: string, outcome: OfferOutcome): void {
  const mine = m.of(chat);
  const open = mine.filter((o) => o.state === "open").length;
  const expected = mine.length >= 10 ? "lifetime-limit" : open >= 3 ? "open-limit" : "recorded";
  expect(outcome.kind).toBe(expected);
  if (outcome.kind !== "recorded") return;
  const s = outcome.suggestion;
  expect(s.workspaceId).toBe(workspaceId);
  m.offers.push({
    sessionId: s.sessionId,
    id: s.id,
    workspaceId,
    position: mine.length + 1,
    offeredAt: s.offeredAt === undefined ? 0 : timestampMs(s.offeredAt),
    state: "open",
  });
}

function newOffer(m: Model) {
  m.turn++;
  return {
    id: `o${m.turn}`,
    turnId: `t${m.turn}`,
    toolCallId: `c${m.turn}`,
    title: `Offer ${m.turn}`,
    tldr: "Worth it",
    brief: "Do it.",
  };
}

class Step implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly label: string,
    readonly exec: (m: Model, r: Real) => Promise<void>,
    readonly allowed: (m: Model) => boolean = () => true,
    readonly pageSize = 3,
  ) {}
  check(m: Readonly<Model>): boolean {
    return this.allowed(m as Model);
  }
  async run(m: Model, r: Real): Promise<void> {
    await this.exec(m, r);
    await compare(m, r, this.pageSize);
  }
  toString(): string {
    return this.label;
  }
}

const chat = fc.nat(5);
const pick = fc.nat(9);
const noPause = (m: Model) => m.paused === undefined;

const steps = [
  chat.map(
    (c) =>
      new Step(`offer c${c}`, async (m, r) => {
        const ws = m.workspaceOf[c] as string;
        applyOffer(m, c, ws, await r.store.offer(m.sessions[c] as string, newOffer(m), false, ws));
      }),
  ),
  fc.record({ c: chat, p: pick, outcome: fc.constantFrom("dismissed", "drafted", "started") }).map(
    ({ c, p, outcome }) =>
      new Step(`${outcome} c${c}#${p}`, async (m, r) => {
        const offer = m.of(c)[p % Math.max(1, m.of(c).length)];
        if (offer === undefined) return;
        const o = outcome as "dismissed" | "drafted" | "started";
        const res = await r.store.settleAndList(offer.sessionId, offer.id, o, "chat-x");
        const fits = offer.state === "open";
        expect(res.outcome.kind).toBe(
          fits ? "recorded" : offer.state === o ? "already" : "not-open",
        );
        if (fits) offer.state = o;
      }),
  ),
  fc.record({ c: chat, p: pick }).map(
    ({ c, p }) =>
      new Step(`restore c${c}#${p}`, async (m, r) => {
        const offer = m.of(c)[p % Math.max(1, m.of(c).length)];
        if (offer === undefined) return;
        const open = m.of(c).filter((o) => o.state === "open").length;
        const res = await r.store.settleAndList(offer.sessionId, offer.id, "restored");
        if (offer.state === "dismissed" && open < 3) {
          expect(res.outcome.kind).toBe("recorded");
          offer.state = "open";
        } else expect(res.outcome.kind).not.toBe("recorded");
      }),
  ),
  fc.record({ c: chat, restore: fc.boolean(), p: pick }).map(
    ({ c, restore, p }) =>
      new Step(
        `writer dies after announcing (${restore ? "restore" : "offer"}) c${c}`,
        async (m, r) => {
          const target = m.of(c).find((o, i) => o.state === "dismissed" && i >= p % 3);
          if (restore && target === undefined) return;
          r.inbox.next = "die";
          const write = restore
            ? r.store.settleAndList(target?.sessionId ?? "", target?.id ?? "", "restored")
            : r.store.offer(
                m.sessions[c] as string,
                newOffer(m),
                false,
                m.workspaceOf[c] as string,
              );
          await expect(write).rejects.toThrow("the writer died");
          r.inbox.next = "none";
        },
      ),
  ),
  chat.map(
    (c) =>
      new Step(
        `writer of c${c} paused between announcing and appending`,
        async (m, r) => {
          const ws = m.workspaceOf[c] as string;
          let resume = () => {};
          r.inbox.gate = new Promise((resolve) => {
            resume = resolve;
          });
          r.inbox.next = "pause";
          const offer = newOffer(m);
          const promise = r.store
            .offer(m.sessions[c] as string, offer, false, ws)
            .catch((e: unknown) => e as Error);
          m.paused = {
            promise: promise.then((outcome) => {
              if (!(outcome instanceof Error)) applyOffer(m, c, ws, outcome);
              return outcome;
            }),
            resume,
            chat: c,
          };
          // Wait for the announcement to be made before the next step.
          for (let i = 0; i < 100 && r.inbox.next === "pause"; i++) await tick();
        },
        noPause,
      ),
  ),
  fc.constant(
    new Step(
      "paused writer resumes",
      async (m) => {
        const paused = m.paused;
        m.paused = undefined;
        paused?.resume();
        const outcome = await paused?.promise;
        if (outcome instanceof Error) throw outcome;
      },
      (m) => m.paused !== undefined,
    ),
  ),
  chat.map(
    (c) =>
      new Step(`c${c} moves to the other workspace`, async (m) => {
        m.workspaceOf[c] = m.workspaceOf[c] === m.workspaces[0] ? m.workspaces[1] : m.workspaces[0];
      }),
  ),
  // Deleted while a write is paused too, unless it is its chat's first record: then the
  // announcement was the only trace of it (README, "The workspace inbox").
  fc.constant(
    new Step(
      "index deleted and rebuilt from the logs",
      async (m) => {
        for (const ws of m.workspaces) {
          const k = workspaceKeys(ws);
          await admin.del(k.offers, k.chats, k.pending);
        }
        await rebuildInboxes(admin, { scanCount: 7 });
      },
      (m) => m.paused === undefined || m.of(m.paused.chat).length > 0,
    ),
  ),
  chat.map(
    (c) =>
      new Step(`projection of c${c} deleted`, async (m) => {
        await admin.del(sessionKeys(m.sessions[c] as string).projection);
      }),
  ),
  fc.constant(
    new Step(
      "read with page size 1",
      async () => {},
      () => true,
      1,
    ),
  ),
];

const tick = () => new Promise((r) => setTimeout(r, 5));

test("the inbox always equals the union of its chats' open lists, newest first", async () => {
  await fc.assert(
    fc.asyncProperty(fc.commands(steps, { maxCommands: 40, size: "max" }), async (commands) => {
      const sessions = Array.from({ length: 6 }, (_, i) => uniqueId(`model-c${i}`));
      const workspaces: [string, string] = [uniqueId("wsA"), uniqueId("wsB")];
      const inbox = new FaultyInbox(admin);
      const real = { store: new SuggestionStore(admin, inbox), inbox };
      const model = new Model(sessions, workspaces);
      try {
        await fc.asyncModelRun(() => ({ model, real }), commands);
      } finally {
        model.paused?.resume();
        await model.paused?.promise;
      }
    }),
    { numRuns: 40 },
  );
}, 240_000);
