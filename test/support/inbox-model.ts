import { timestampMs } from "@bufbuild/protobuf/wkt";
import { expect } from "vitest";
import type { OfferOutcome, SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";

/* The reference model of test/store/inbox-model.test.ts, and the inbox it injects faults with. */

/** Where an offer stands. */
export type Standing = "open" | "started" | "drafted" | "dismissed";

/** An offer as the model knows it. */
export interface Offer {
  readonly sessionId: string;
  readonly id: string;
  readonly workspaceId: string;
  /** Its place in its chat's offer order (1, 2, ...). */
  readonly position: number;
  readonly offeredAt: number;
  state: Standing;
}

/** An inbox whose next announcement (a call of its own) can kill its writer or pause it. */
export class FaultyInbox extends WorkspaceInbox {
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

/** Six chats of two workspaces: their offers, and a paused writer if any. */
export class Model {
  readonly offers: Offer[] = [];
  readonly workspaceOf: string[];
  paused: { chat: number; promise: Promise<unknown>; resume: () => void } | undefined;
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

/** What the steps run against. */
export interface Real {
  readonly store: SuggestionStore;
  readonly inbox: FaultyInbox;
}

/** The inbox's order: newest offer first, then by session id, then later in the chat first. */
export function newestFirst(a: Offer, b: Offer): number {
  if (a.offeredAt !== b.offeredAt) return b.offeredAt - a.offeredAt;
  if (a.sessionId !== b.sessionId) return a.sessionId < b.sessionId ? 1 : -1;
  return b.position - a.position;
}

/** Applies what an offer answered, checking it against the model's quotas. */
export function applyOffer(
  m: Model,
  chat: number,
  workspaceId: string,
  outcome: OfferOutcome,
): void {
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

/** A new offer on a turn of its own. */
export function newOffer(m: Model) {
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
