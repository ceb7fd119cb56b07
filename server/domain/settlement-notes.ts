import {
  DismissReason,
  Settler,
  type Suggestion,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";

/** The words of a dismissal's reason in the line, as the contract fixes them. */
const REASON_WORDS: Readonly<Partial<Record<DismissReason, string>>> = {
  [DismissReason.NOT_WANTED]: "not wanted",
  [DismissReason.ALREADY_DONE]: "already done",
  [DismissReason.DUPLICATE]: "a duplicate",
  [DismissReason.OTHER]: "other",
};

/**
 * The line that tells the offering model where one of its settled offers stands, in the
 * contract's words (docs/sdk.md, `settlementNotes`): started as a new chat, saved as a
 * draft, dismissed by the person (with the reason's words and their note when given), or
 * withdrawn by the agent itself. An open offer (a restored one too) has no line. The
 * SDK gives the same lines from the settlements (test/mcp/sdk-parity.test.ts
 * holds the two equal); MCP's `list_suggestions` reads them from here.
 */
export function settlementNote(suggestion: Suggestion): string | undefined {
  const title = suggestion.title;
  switch (suggestion.state) {
    case SuggestionState.STARTED:
      return `The user started your suggestion "${title}" as a new chat.`;
    case SuggestionState.DRAFTED:
      return `The user saved your suggestion "${title}" as a draft.`;
    case SuggestionState.DISMISSED: {
      if (suggestion.settledBy === Settler.AGENT) return `You withdrew your suggestion "${title}".`;
      const words = REASON_WORDS[suggestion.dismissReason];
      if (words === undefined) {
        return `The user dismissed your suggestion "${title}"; do not offer it again.`;
      }
      const note = suggestion.dismissNote === "" ? "" : ` Their note: ${suggestion.dismissNote}`;
      return `The user dismissed your suggestion "${title}" as ${words}; do not offer it again.${note}`;
    }
    default:
      return undefined;
  }
}
