import { ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { expect } from "vitest";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { sessionKeys } from "../../server/store/keys.js";
import { appendRaw } from "./lists.js";
import type { TestServerHandle } from "./server-fixture.js";
import { offerOne } from "./suggest.js";
import {
  compare,
  Model,
  ms,
  type Outcome,
  type Real,
  type Standing,
  viewOf,
} from "./suggestion-model.js";

/*
 * The steps (fast-check commands) of test/e2e/model.test.ts: each acts on the service and
 * on the reference model (test/support/suggestion-model.ts), checks the service answered
 * as the model predicts, and ends by comparing the lists.
 */

/** What the steps act on: the test server, and a kill -9 restart of its Redis. */
export interface ModelEnv {
  readonly t: TestServerHandle;
  readonly restartRedis: () => Promise<void>;
}

/** One step of a run; every step ends by comparing the lists. */
export class Step implements fc.AsyncCommand<Model, Real> {
  constructor(
    private readonly env: ModelEnv,
    private readonly label: string,
    private readonly exec: (m: Model, r: Real) => Promise<void>,
    private readonly allowed: (m: Model) => boolean = () => true,
  ) {}
  check(m: Readonly<Model>): boolean {
    return this.allowed(m);
  }
  async run(m: Model, r: Real): Promise<void> {
    await this.exec(m, r);
    await compare(this.env.t, m, r);
  }
  toString(): string {
    return this.label;
  }
}

/** SuggestTask: recorded unless 10 were offered or 3 are open (the model's quotas). */
async function toolOffer(t: TestServerHandle, m: Model, r: Real): Promise<void> {
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
async function rpcSettle(
  t: TestServerHandle,
  m: Model,
  r: Real,
  outcome: Outcome,
  id: string,
): Promise<void> {
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
async function rawOffer(
  t: TestServerHandle,
  m: Model,
  r: Real,
  long: boolean,
  reuse: number | undefined,
) {
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
async function rawSettle(
  t: TestServerHandle,
  m: Model,
  r: Real,
  outcome: string,
  id: string,
): Promise<void> {
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

const pick = fc.option(fc.nat(20), { nil: undefined, freq: 6 });
/** A settlement through an RPC, with one of `outcomes`, aimed at an offer or at none. */
const rpcStep = (env: ModelEnv, outcomes: Outcome[]) =>
  fc
    .record({ outcome: fc.constantFrom(...outcomes), pick })
    .map(
      ({ outcome, pick }) =>
        new Step(env, `rpc ${outcome} #${pick}`, (m, r) =>
          rpcSettle(env.t, m, r, outcome, m.target(pick)),
        ),
    );

/**
 * The steps a run draws from, bound to `env`: offers through the tool and hand-written,
 * settlements through the RPCs and hand-written (fitting or not), records of unknown
 * kinds, a deleted projection, and at most one kill -9 restart of Redis a run.
 */
export function modelSteps(env: ModelEnv) {
  const { t } = env;
  const step = (
    label: string,
    exec: (m: Model, r: Real) => Promise<void>,
    allowed?: (m: Model) => boolean,
  ) => new Step(env, label, exec, allowed);
  return [
    fc.constant(step("tool offer", (m, r) => toolOffer(t, m, r))),
    fc.constant(step("tool offer", (m, r) => toolOffer(t, m, r))),
    rpcStep(env, ["drafted", "dismissed", "restored"]),
    rpcStep(env, ["drafted", "dismissed", "restored"]),
    rpcStep(env, ["dismissed", "restored"]),
    rpcStep(env, ["dismissed", "restored"]),
    fc
      .record({ long: fc.boolean(), reuse: fc.option(fc.nat(20), { nil: undefined, freq: 4 }) })
      .map(({ long, reuse }) =>
        step(`raw offer long=${long} reuse=${reuse}`, (m, r) => rawOffer(t, m, r, long, reuse)),
      ),
    fc
      .record({
        outcome: fc.constantFrom("started", "drafted", "dismissed", "restored", "bogus"),
        pick,
      })
      .map(({ outcome, pick }) =>
        step(`raw ${outcome} #${pick}`, (m, r) => rawSettle(t, m, r, outcome, m.target(pick))),
      ),
    fc.nat(20).map((p) =>
      step(`raw unknown kind #${p}`, async (m, r) => {
        await appendRaw(t.redis, r.sessionId, {
          type: "note",
          id: m.target(p),
          outcome: "started",
        });
      }),
    ),
    fc.constant(
      step("delete projection", async (_m, r) => {
        await t.redis.del(sessionKeys(r.sessionId).projection);
      }),
    ),
    // At most one restart a run: each costs a few hundred ms.
    fc.constant(
      step(
        "kill -9 and restart Redis",
        async (m) => {
          m.restarts++;
          await env.restartRedis();
        },
        (m) => m.restarts === 0,
      ),
    ),
  ];
}
