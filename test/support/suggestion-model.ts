import { timestampMs } from "@bufbuild/protobuf/wkt";
import { expect } from "vitest";
import { type Suggestion, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { TestServerHandle } from "./server-fixture.js";

/*
 * The reference model of test/e2e/model.test.ts, written from docs/contract.md: a
 * session's offers in the order they were made, the settlement rule, and the comparison
 * of the service's lists with it. Its steps: test/support/model-steps.ts.
 */

export type Standing = "open" | "started" | "drafted" | "dismissed";
export type Outcome = "started" | "drafted" | "dismissed" | "restored";

export interface Offer {
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
export class Model {
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

/** The run's real side: the session the service holds. */
export interface Real {
  readonly sessionId: string;
}

/** A timestamp in milliseconds, as the model keeps it. */
export const ms = (s: Suggestion["offeredAt"]) => (s === undefined ? undefined : timestampMs(s));
/** A suggestion of the service as the model writes an offer. */
export const viewOf = (s: Suggestion) => ({
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
export async function compare(t: TestServerHandle, m: Model, r: Real): Promise<void> {
  const lists = await t.clients.suggestions.listSuggestions({ sessionId: r.sessionId });
  const open = m.offers.filter((o) => o.state === "open").reverse();
  const settled = m.offers.filter((o) => o.state !== "open");
  expect(lists.open.map(viewOf)).toEqual(open.map((o) => ({ ...o })));
  expect(lists.settled.map(viewOf)).toEqual(settled.map((o) => ({ ...o })));
}
