import { create } from "@bufbuild/protobuf";
import { describe, expect, test } from "vitest";
import {
  DismissReason,
  type Settlement,
  SettlementOutcome,
  SettlementSchema,
  Settler,
  SuggestionSchema,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { settlementNotes } from "../../sdk/src/settlement-notes.js";
import { mcpTool } from "../../sdk/src/tool.js";
import { withdrawSuggestionTool as sdkWithdrawTool } from "../../sdk/src/withdraw-tool.js";
import { settlementNote } from "../../server/domain/settlement-notes.js";
import {
  mcpToolEntry,
  suggestTaskTool,
  withdrawSuggestionTool,
} from "../../server/domain/tool-declaration.js";

// The service reads its own copies of what the SDK gives a runtime (the server may not
// import sdk/): the MCP tools' definitions and the settlement lines list_suggestions
// shows. These hold the two equal.

/** A settlement as ListSettlements answers it: the suggestion as it stood right after it. */
function settlement(
  outcome: SettlementOutcome,
  state: SuggestionState,
  more: { settledBy?: Settler; dismissReason?: DismissReason; dismissNote?: string } = {},
): Settlement {
  const title = 'Fix "CI" on main';
  return create(SettlementSchema, {
    outcome,
    settledBy: more.settledBy ?? Settler.PERSON,
    dismissReason: more.dismissReason ?? DismissReason.UNSPECIFIED,
    dismissNote: more.dismissNote ?? "",
    suggestion: create(SuggestionSchema, {
      id: "s-1",
      title,
      state,
      settledBy: more.settledBy ?? Settler.PERSON,
      dismissReason: more.dismissReason ?? DismissReason.UNSPECIFIED,
      dismissNote: more.dismissNote ?? "",
    }),
  });
}

describe("settlement lines", () => {
  const SETTLED: [string, Settlement][] = [
    ["started", settlement(SettlementOutcome.STARTED, SuggestionState.STARTED)],
    ["drafted", settlement(SettlementOutcome.DRAFTED, SuggestionState.DRAFTED)],
    ["dismissed", settlement(SettlementOutcome.DISMISSED, SuggestionState.DISMISSED)],
    [
      "withdrawn by the agent",
      settlement(SettlementOutcome.DISMISSED, SuggestionState.DISMISSED, {
        settledBy: Settler.AGENT,
      }),
    ],
    ...[
      DismissReason.NOT_WANTED,
      DismissReason.ALREADY_DONE,
      DismissReason.DUPLICATE,
      DismissReason.OTHER,
    ].flatMap((reason): [string, Settlement][] => [
      [
        `dismissed as ${DismissReason[reason]}`,
        settlement(SettlementOutcome.DISMISSED, SuggestionState.DISMISSED, {
          dismissReason: reason,
        }),
      ],
      [
        `dismissed as ${DismissReason[reason]} with a note`,
        settlement(SettlementOutcome.DISMISSED, SuggestionState.DISMISSED, {
          dismissReason: reason,
          dismissNote: "Done in #42",
        }),
      ],
    ]),
  ];

  test.each(SETTLED)("%s: the service's line is the SDK's", (_, s) => {
    const sdk = settlementNotes([s]);
    expect(sdk).toHaveLength(1);
    expect(settlementNote(s.suggestion ?? create(SuggestionSchema))).toBe(sdk[0]);
  });

  test("an open offer, a restored one too, has no line in the list", () => {
    const restored = settlement(SettlementOutcome.RESTORED, SuggestionState.OPEN);
    expect(settlementNote(restored.suggestion ?? create(SuggestionSchema))).toBeUndefined();
  });
});

describe("tool definitions", () => {
  test("the service's tools/list entries are the SDK's mcpTool() output", () => {
    expect(mcpToolEntry(suggestTaskTool)).toEqual(mcpTool());
    expect(mcpToolEntry(withdrawSuggestionTool)).toEqual(mcpTool(sdkWithdrawTool));
  });
});
