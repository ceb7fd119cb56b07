import type { Settlement } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { settlementNotes } from "../../sdk/src/settlement-notes.js";
import type { Clients } from "./harness.js";

/** The contract's lines of `settlementNotes` (docs/sdk.md), copied exactly. */
export const NOTE = {
  started: (title: string) => `The user started your suggestion "${title}" as a new chat.`,
  drafted: (title: string) => `The user saved your suggestion "${title}" as a draft.`,
  dismissed: (title: string) =>
    `The user dismissed your suggestion "${title}"; do not offer it again.`,
  withdrawn: (title: string) => `You withdrew your suggestion "${title}".`,
  restored: (title: string) => `The user restored your suggestion "${title}"; it waits again.`,
} as const;

/** A runtime's report-back reader: asks from its last cursor and keeps what it heard. */
export class SettlementReader {
  cursor = "";
  readonly heard: Settlement[] = [];

  constructor(private readonly sessionId: string) {}

  /** Asks once through `clients`; answers the notes of what is new. */
  async poll(clients: Clients): Promise<string[]> {
    const res = await clients.suggestions.listSettlements({
      sessionId: this.sessionId,
      after: this.cursor,
    });
    if (res.settlements.length === 0 && res.cursor !== this.cursor) {
      throw new Error(`an empty answer moved the cursor from ${this.cursor} to ${res.cursor}`);
    }
    this.cursor = res.cursor;
    this.heard.push(...res.settlements);
    return settlementNotes(res.settlements);
  }
}
