import { timestampMs } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type RedisServerProcess,
  startRedisServer,
} from "../../server/redis/redis-server-process.js";
import { sessionKeys } from "../../server/store/keys.js";
import { ownRedis, putSession, uniqueId } from "../support/harness.js";
import { appendRaw } from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

/*
 * A model-based test: random sequences of offers (through the tool and hand-written),
 * settlements (through the RPCs and hand-written, fitting or not), records of unknown
 * kinds, deleted projections and kill -9 restarts of Redis run against the service and
 * against a small reference model written from the reference page; after every step the
 * lists must be the model's, and every RPC must answer as the model predicts.
 */

type Standing = "open" | "started" | "drafted" | "dismissed";
type Outcome = "started" | "drafted" | "dismissed" | "restored";

interface Offer {
  id: string;
  turnId: string;
  title: string;
  tldr: string;
  brief: string;
  state: Standing;
  chatId: string;
  offeredAt: number;
  settledAt: number | undefined;
}

/** The reference model: offers in the order they were made. */
class Model {
  readonly offers: Offer[] = [];
  clock = 1_600_000_000_000;
  seq = 0;
  restarts = 0;
  find(id: string) {
    return this.offers.find((o) => o.id === id);
  }
  get openCount() {
    return this.offers.filter((o) => o.state === "open").length;
  }
  /** The id a step aims at: an offer by index, or one that names no offer. */
  target(pick: number | undefined): string {
    const offer = pick === undefined ? undefined : this.offers[pick % this.offers.length];
    return offer?.id ?? `ghost-${++this.seq}`;
  }
  /** The reference's rule: does `outcome` fit the offer's standing? */
  static fits(state: Standing, outcome: string): boolean {
    return outcome === "restored"
      ? state === "dismissed"
      : state === "open" && ["started", "drafted", "dismissed"].includes(outcome);
  }
}

interface Real {
  readonly sessionId: string;
}

let redisServer: RedisServerProcess & { remove: () => void };
beforeAll(async () => {
  redisServer = await ownRedis();
});
afterAll(async () => {
  await redisServer.kill();
  redisServer.remove();
});
const t = useTestServer({ redisUrl: () => redisServer.url });
beforeAll(() => {
  t.redis.on("error", () => {
    // Refused while Redis restarts; the next command waits for the reconnect.
  });
});

const ms = (s: Suggestion["offeredAt"]) => (s === undefined ? undefined : timestampMs(s));
const viewOf = (s: Suggestion) => ({
  id: s.id,
  turnId: s.turnId,
  title: s.title,
  tldr: s.tldr,
  brief: s.brief,
  state: SuggestionState[s.state].toLowerCase(),
  chatId: s.chatId,
  offeredAt: ms(s.offeredAt),
  settledAt: ms(s.settledAt),
});

/** The lists of the service must be the model's, in both orders. */
async function compare(m: Model, r: Real): Promise<void> {
  const lists = await t.clients.suggestions.listSuggestions({ sessionId: r.sessionId });
  const open = m.offers.filter((o) => o.state === "open").reverse();
  const settled = m.offers.filter((o) => o.state !== "open");
  expect(lists.open.map(viewOf)).toEqual(open.map((o) => ({ ...o })));
  expect(lists.settled.map(viewOf)).toEqual(settled.map((o) => ({ ...o })));
}

/** One step of a run; every step ends by comparing the lists. */
class Step implements fc.AsyncCommand<Model, Real> {
  constructor(
    private readonly label: string,
    private readonly exec: (m: Model, r: Real) => Promise<void>,
    private readonly allowed: (m: Model) => boolean = () => true,
  ) {}
  check(m: Readonly<Model>): boolean {
    return this.allowed(m);
  }
  async run(m: Model, r: Real): Promise<void> {
    await this.exec(m, r);
    await compare(m, r);
  }
  toString(): string {
    return this.label;
  }
}

/** SuggestTask: recorded unless 10 were offered or 3 are open (the model's quotas). */
async function toolOffer(m: Model, r: Real): Promise<void> {
  const title = `Tool ${m.offers.length}`;
  const call = offerOne(t.clients, r.sessionId, title);
  if (m.offers.length >= 10 || m.openCount >= 3) {
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).rawMessage).toBe(
      m.offers.length >= 10
        ? "suggest_task: this chat already offered 10 suggestions; offer no more"
        : "suggest_task: 3 suggestions already wait for the user; offer no more until one is started or dismissed",
    );
    return;
  }
  const s = await call;
  // The id, the turn and the time are the service's to make; the rest is the model's.
  m.offers.push({
    id: s.id,
    turnId: s.turnId,
    title,
    tldr: "Worth doing",
    brief: "Do the follow-up.",
    state: "open",
    chatId: "",
    offeredAt: ms(s.offeredAt) ?? 0,
    settledAt: undefined,
  });
}

/** Draft, Dismiss or Restore through the RPC: answered as the model predicts. */
async function rpcSettle(m: Model, r: Real, outcome: Outcome, id: string): Promise<void> {
  const request = { sessionId: r.sessionId, suggestionId: id };
  const call =
    outcome === "drafted"
      ? t.clients.suggestions.draftSuggestion(request)
      : outcome === "dismissed"
        ? t.clients.suggestions.dismissSuggestion(request)
        : t.clients.suggestions.restoreSuggestion(request);
  const answer = await call.then(
    (res) => ({ ok: res.suggestion as Suggestion }),
    (e: unknown) => ({ err: e as ConnectError }),
  );
  const offer = m.find(id);
  const asked: Standing = outcome === "restored" ? "open" : (outcome as Standing);
  let expectedError: string | undefined;
  if (offer === undefined) expectedError = `no suggestion "${id}"`;
  else if (offer.state === asked)
    expectedError = undefined; // answered as it is
  else if (!Model.fits(offer.state, outcome))
    expectedError = `suggestion "${id}" is ${offer.state}`;
  else if (outcome === "restored" && m.openCount >= 3)
    expectedError = "3 suggestions are already open";
  if (expectedError !== undefined) {
    expect("err" in answer && answer.err.rawMessage).toBe(expectedError);
    return;
  }
  if (!("ok" in answer)) throw answer.err;
  if (offer === undefined) throw new Error("unreachable");
  if (offer.state !== asked) {
    offer.state = asked;
    offer.settledAt = outcome === "restored" ? undefined : ms(answer.ok.settledAt);
    expect(offer.settledAt === undefined).toBe(outcome === "restored");
  }
  expect(viewOf(answer.ok)).toEqual({ ...offer });
}

/** An `offered` record written straight onto the stream; a repeated id is ignored. */
async function rawOffer(m: Model, r: Real, long: boolean, reuse: number | undefined) {
  const existing = reuse === undefined ? undefined : m.offers[reuse % Math.max(1, m.offers.length)];
  const id = existing?.id ?? `raw-${++m.seq}`;
  const time = ++m.clock;
  const title = long ? "x".repeat(500) : `Raw ${id}`;
  await appendRaw(t.redis, r.sessionId, {
    type: "offered",
    id,
    turn: `raw-turn-${id}`,
    title,
    tldr: "raw tldr",
    brief: "raw brief",
    time: String(time),
  });
  if (existing !== undefined) return;
  m.offers.push({
    id,
    turnId: `raw-turn-${id}`,
    title,
    tldr: "raw tldr",
    brief: "raw brief",
    state: "open",
    chatId: "",
    offeredAt: time,
    settledAt: undefined,
  });
}

/** A `settled` record written straight onto the stream, fitting its offer or not. */
async function rawSettle(m: Model, r: Real, outcome: string, id: string): Promise<void> {
  const time = ++m.clock;
  const chat = outcome === "started" ? `chat-${++m.seq}` : "";
  const fields: Record<string, string> = { type: "settled", id, outcome };
  if (chat !== "") fields.chat = chat;
  await appendRaw(t.redis, r.sessionId, { ...fields, time: String(time) });
  const offer = m.find(id);
  if (offer === undefined || !Model.fits(offer.state, outcome)) return;
  offer.state = outcome === "restored" ? "open" : (outcome as Standing);
  offer.chatId = chat;
  offer.settledAt = outcome === "restored" ? undefined : time;
}

/** kill -9 of Redis, restarted on the same AOF; waits until the service answers again. */
async function restartRedis(): Promise<void> {
  await redisServer.kill();
  const restarted = await startRedisServer({ dir: redisServer.dir, port: redisServer.port });
  redisServer = Object.assign(restarted, { remove: redisServer.remove });
  for (let i = 0; ; i++) {
    try {
      await t.clients.suggestions.listSuggestions({ sessionId: "probe" });
      await t.redis.ping();
      return;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const pick = fc.option(fc.nat(20), { nil: undefined, freq: 6 });
/** A settlement through an RPC, with one of `outcomes`, aimed at an offer or at none. */
const rpcStep = (outcomes: Outcome[]) =>
  fc
    .record({ outcome: fc.constantFrom(...outcomes), pick })
    .map(
      ({ outcome, pick }) =>
        new Step(`rpc ${outcome} #${pick}`, (m, r) => rpcSettle(m, r, outcome, m.target(pick))),
    );
const steps = [
  fc.constant(new Step("tool offer", toolOffer)),
  fc.constant(new Step("tool offer", toolOffer)),
  rpcStep(["drafted", "dismissed", "restored"]),
  rpcStep(["drafted", "dismissed", "restored"]),
  rpcStep(["dismissed", "restored"]),
  rpcStep(["dismissed", "restored"]),
  fc
    .record({ long: fc.boolean(), reuse: fc.option(fc.nat(20), { nil: undefined, freq: 4 }) })
    .map(
      ({ long, reuse }) =>
        new Step(`raw offer long=${long} reuse=${reuse}`, (m, r) => rawOffer(m, r, long, reuse)),
    ),
  fc
    .record({
      outcome: fc.constantFrom("started", "drafted", "dismissed", "restored", "bogus"),
      pick,
    })
    .map(
      ({ outcome, pick }) =>
        new Step(`raw ${outcome} #${pick}`, (m, r) => rawSettle(m, r, outcome, m.target(pick))),
    ),
  fc.nat(20).map(
    (p) =>
      new Step(`raw unknown kind #${p}`, async (m, r) => {
        await appendRaw(t.redis, r.sessionId, {
          type: "note",
          id: m.target(p),
          outcome: "started",
        });
      }),
  ),
  fc.constant(
    new Step("delete projection", async (_m, r) => {
      await t.redis.del(sessionKeys(r.sessionId).projection);
    }),
  ),
  // At most one restart a run: each costs a few hundred ms.
  fc.constant(
    new Step(
      "kill -9 and restart Redis",
      async (m) => {
        m.restarts++;
        await restartRedis();
      },
      (m) => m.restarts === 0,
    ),
  ),
];

test("random offers, settlements, bad records and restarts match the reference model", async () => {
  await fc.assert(
    fc.asyncProperty(fc.commands(steps, { maxCommands: 20, size: "max" }), async (commands) => {
      const sessionId = uniqueId("model");
      await putSession(t.clients, { sessionId });
      await fc.asyncModelRun(() => ({ model: new Model(), real: { sessionId } }), commands);
    }),
    { numRuns: 30 },
  );
}, 120_000);
