import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { rebuildInboxes } from "../../server/store/inbox-rebuild.js";
import { sessionKeys, workspaceKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { ownRedis, redisClient, uniqueId } from "../support/harness.js";
import {
  applyOffer,
  FaultyInbox,
  Model,
  newestFirst,
  newOffer,
  type Real,
} from "../support/inbox-model.js";

/*
 * A model-based test of the workspace inbox: random offers, settlements and restores in
 * six chats of two workspaces (chats also move between workspaces), with crashes
 * injected between the steps of a write (the writer of an offer, a settlement or a
 * restore dies after announcing its chat, before appending), writers paused between
 * the two steps while reads go on (their tokens get fenced: they announce again), the
 * index deleted and rebuilt from the logs, and projections deleted. After every step
 * each workspace's inbox, read page by page, must be exactly the union of its chats'
 * open offers, newest offer first.
 */

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

/** Faults between the two steps of a write: only where the announcement is a call of its own. */
const faultSteps = [
  fc.record({ c: chat, kind: fc.constantFrom("offer", "dismiss", "restore") }).map(
    ({ c, kind }) =>
      new Step(`writer dies after announcing (${kind}) c${c}`, async (m, r) => {
        const open = m.of(c).filter((o) => o.state === "open");
        const target =
          kind === "dismiss"
            ? open[0]
            : m.of(c).find((o) => o.state === "dismissed" && open.length < 3);
        if (kind !== "offer" && target === undefined) return;
        r.inbox.next = "die";
        const ws = m.workspaceOf[c] as string;
        const write =
          kind === "offer"
            ? r.store.offer(m.sessions[c] as string, newOffer(m), false, ws)
            : r.store.settleAndList(
                target?.sessionId ?? "",
                target?.id ?? "",
                kind === "dismiss" ? "dismissed" : "restored",
              );
        await expect(write).rejects.toThrow("the writer died");
        r.inbox.next = "none";
      }),
  ),
  fc.record({ c: chat, dismiss: fc.boolean() }).map(
    ({ c, dismiss }) =>
      new Step(
        `writer of c${c} paused between announcing and appending (${dismiss ? "dismiss" : "offer"})`,
        async (m, r) => {
          const ws = m.workspaceOf[c] as string;
          const target = m.of(c).find((o) => o.state === "open");
          if (dismiss && target === undefined) return;
          let resume = () => {};
          r.inbox.gate = new Promise((resolve) => {
            resume = resolve;
          });
          r.inbox.next = "pause";
          const write = dismiss
            ? r.store.settle(target?.sessionId ?? "", target?.id ?? "", "dismissed").then((o) => {
                // Applied when it lands: as the offer stands then.
                const state = target?.state;
                const kinds = { open: "recorded", dismissed: "already" } as Record<string, string>;
                expect(o.kind).toBe(kinds[state ?? ""] ?? "not-open");
                if (target !== undefined && state === "open") target.state = "dismissed";
              })
            : r.store.offer(m.sessions[c] as string, newOffer(m), false, ws).then((o) => {
                applyOffer(m, c, ws, o);
              });
          m.paused = { promise: write.catch((e: unknown) => e as Error), resume, chat: c };
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
];

const tick = () => new Promise((r) => setTimeout(r, 5));

test("the inbox always equals the union of its chats' open lists, newest first, with faults between an announcement and its append", async () => {
  const all = [...steps, ...faultSteps];
  await fc.assert(
    fc.asyncProperty(fc.commands(all, { maxCommands: 40, size: "max" }), async (commands) => {
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
