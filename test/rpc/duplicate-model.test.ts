import { Code } from "@connectrpc/connect";
import fc from "fast-check";
import { expect, test } from "vitest";
import {
  AgentRole,
  DismissReason,
  RefusalReason,
  type Suggestion,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { parseEntries } from "../../server/domain/fold.js";
import { sessionKeys } from "../../server/store/keys.js";
import { connectErrorOf, putSession, uniqueId } from "../support/harness.js";
import { duplicateOf } from "../support/model/duplicate-offer.js";
import { foldLog } from "../support/model/fold.js";
import { useTestServer } from "../support/server-fixture.js";
import { expectRefusal, nextTurnId, REFUSAL_TEXT, refusalOf } from "../support/suggest.js";

/*
 * A property test of the duplicate rule (docs/contract.md, SuggestTask's
 * refusals, row 9): after any sequence of offers (titles from a small set, in case, white-space
 * and punctuation variants), dismissals by the person, withdrawals by the agent,
 * restores, drafts and starts, each new offer is answered as three readings say:
 *   - the script's (store/lua/offer-3.lua, comparing the normalized titles the service
 *     recorded), which is what the service answers;
 *   - the TypeScript reading of the rule (test/support/model/duplicate-offer.ts `duplicateOf`) over
 *     the fold of the log as it stands in Redis (test/support/model/fold.ts `foldLog`);
 *   - this file's own model of the offers and their standings, normalizing on its own.
 * A refused offer records nothing; the limits (10 offered, 3 open) still answer first.
 */

const t = useTestServer();

const BASES = ["Add retries", "Über die Tests"] as const;

/** Variants of a title: the same offer for the rule, or (punctuation) another one. */
const VARIANTS: readonly ((title: string) => string)[] = [
  (s) => s,
  (s) => s.toLowerCase(),
  (s) => s.toUpperCase(),
  (s) => `  ${s}\t `,
  (s) => s.replace(" ", "   "),
  (s) => s.replace(" ", "\u00a0\u2003"),
  (s) => `${s}.`,
  (s) => s.replace(" ", "-"),
  (s) => `${s}!`,
];

/** The model's normalization, written apart from the service's. */
const normal = (title: string) => title.trim().toLowerCase().split(/\s+/).join(" ");

type Standing = "open" | "started" | "drafted" | "dismissed";

interface ModelOffer {
  readonly id: string;
  /** Trimmed, as recorded. */
  readonly title: string;
  state: Standing;
  by: "person" | "agent" | "";
}

type Action =
  | { kind: "offer"; base: number; variant: number }
  | { kind: "dismiss"; pick: number; reason: DismissReason }
  | { kind: "withdraw"; pick: number }
  | { kind: "restore" | "draft" | "start"; pick: number }
  | { kind: "projection deleted" };

const pick = fc.nat(9);
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("offer" as const),
      base: fc.nat(BASES.length - 1),
      variant: fc.nat(VARIANTS.length - 1),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("dismiss" as const),
      pick,
      reason: fc.constantFrom(DismissReason.UNSPECIFIED, DismissReason.DUPLICATE),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("withdraw" as const), pick }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("restore" as const), pick }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom("draft", "start"), pick }) },
  // The next script folds the log again (and its check reads what it folded).
  { weight: 1, arbitrary: fc.constant({ kind: "projection deleted" as const }) },
);

/** What the model says a new offer gets. */
function predicted(offers: readonly ModelOffer[], title: string) {
  if (offers.length >= 10) return "lifetime";
  if (offers.filter((o) => o.state === "open").length >= 3) return "open";
  const same = offers.filter((o) => normal(o.title) === normal(title));
  if (same.some((o) => o.state === "open")) return "duplicate-open";
  if (same.some((o) => o.state === "dismissed" && o.by === "person")) return "duplicate-dismissed";
  return "recorded";
}

/** The TypeScript reading: the rule over the fold of the log as it stands in Redis. */
async function tsReading(sessionId: string, title: string) {
  const entries = await t.redis.xrange(sessionKeys(sessionId).log, "-", "+");
  const lists = foldLog(sessionId, parseEntries(entries));
  const reason = duplicateOf(lists.byId.values(), title);
  return reason === RefusalReason.DUPLICATE_OPEN
    ? "duplicate-open"
    : reason === RefusalReason.DUPLICATE_DISMISSED
      ? "duplicate-dismissed"
      : "recorded";
}

const STATES: Record<Standing, SuggestionState> = {
  open: SuggestionState.OPEN,
  started: SuggestionState.STARTED,
  drafted: SuggestionState.DRAFTED,
  dismissed: SuggestionState.DISMISSED,
};

async function offerStep(sessionId: string, offers: ModelOffer[], raw: string): Promise<void> {
  const title = raw.trim();
  const expected = predicted(offers, raw);
  const limitsPass = expected !== "lifetime" && expected !== "open";
  if (limitsPass) expect(await tsReading(sessionId, raw)).toBe(expected);
  const log = sessionKeys(sessionId).log;
  const before = await t.redis.xlen(log);
  const call = t.clients.suggestions.suggestTask({
    context: { sessionId, turnId: nextTurnId(), role: AgentRole.TOP_LEVEL },
    args: { title: raw, tldr: "Worth it", brief: "Do it." },
  });
  if (expected === "recorded") {
    const res = await call;
    const s = res.suggestion as Suggestion;
    expect(s.title).toBe(title);
    offers.push({ id: s.id, title, state: "open", by: "" });
    const [, fields] = (await t.redis.xrevrange(log, "+", "-", "COUNT", 1))[0] ?? [];
    const record = parseEntries([["0-0", fields ?? []]])[0]?.fields ?? {};
    expect([record.type, record.nt]).toEqual(["offered", normal(raw)]);
    return;
  }
  const refusal = await refusalOf(call);
  if (expected === "lifetime" || expected === "open") {
    expect(refusal.message).toBe(expected === "open" ? REFUSAL_TEXT.open : REFUSAL_TEXT.lifetime);
  } else {
    const open = expected === "duplicate-open";
    expectRefusal(refusal, {
      message: open
        ? `suggest_task: "${title}" already waits for the user; offer something else`
        : `suggest_task: the user dismissed "${title}"; do not offer it again`,
      code: Code.AlreadyExists,
      reason: open ? RefusalReason.DUPLICATE_OPEN : RefusalReason.DUPLICATE_DISMISSED,
    });
  }
  expect(await t.redis.xlen(log)).toBe(before);
}

async function settleStep(sessionId: string, offers: ModelOffer[], a: Action): Promise<void> {
  if (a.kind === "offer") return;
  if (a.kind === "projection deleted") {
    await t.redis.del(sessionKeys(sessionId).projection);
    return;
  }
  const s = t.clients.suggestions;
  if (a.kind === "withdraw") {
    const open = offers.filter((o) => o.state === "open");
    const chosen = open[a.pick % Math.max(1, open.length)];
    const title = chosen?.title ?? "Nothing like it";
    const call = s.withdrawSuggestion({
      context: { sessionId, turnId: nextTurnId(), role: AgentRole.TOP_LEVEL },
      args: { title, reason: "done here" },
    });
    if (chosen === undefined) {
      expect((await connectErrorOf(call)).code).toBe(Code.NotFound);
      return;
    }
    // The newest open offer with that exact title.
    const target = open.filter((o) => o.title === title).at(-1) as ModelOffer;
    expect((await call).suggestion?.id).toBe(target.id);
    [target.state, target.by] = ["dismissed", "agent"];
    return;
  }
  const target = offers[a.pick % Math.max(1, offers.length)];
  if (target === undefined) return;
  const request = { sessionId, suggestionId: target.id };
  const openCount = offers.filter((o) => o.state === "open").length;
  let after: Standing | undefined;
  let call: Promise<{ suggestion?: Suggestion | undefined }>;
  switch (a.kind) {
    case "dismiss":
      call = s.dismissSuggestion({ ...request, reason: a.reason });
      if (target.state === "open") [after, target.by] = ["dismissed", "person"];
      else if (target.state === "dismissed") after = "dismissed";
      break;
    case "draft":
      call = s.draftSuggestion(request);
      if (target.state === "open" || target.state === "drafted") after = "drafted";
      break;
    case "start":
      call = s.startSuggestion(request);
      if (target.state === "open" || target.state === "started") after = "started";
      break;
    case "restore":
      call = s.restoreSuggestion(request);
      if (target.state === "open") after = "open";
      else if (target.state === "dismissed" && openCount < 3) [after, target.by] = ["open", ""];
      break;
  }
  if (after === undefined) {
    await connectErrorOf(call);
    return;
  }
  expect((await call).suggestion?.state).toBe(STATES[after]);
  target.state = after;
}

test("the script and the TypeScript reading agree on every duplicate, after any sequence", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(action, { minLength: 4, maxLength: 20, size: "max" }),
      async (actions) => {
        const sessionId = uniqueId("dup");
        await putSession(t.clients, { sessionId });
        const offers: ModelOffer[] = [];
        for (const a of actions) {
          if (a.kind === "offer") {
            const variant = VARIANTS[a.variant] as (s: string) => string;
            await offerStep(sessionId, offers, variant(BASES[a.base] as string));
          } else await settleStep(sessionId, offers, a);
        }
      },
    ),
    { numRuns: 20 },
  );
});
