import { Code } from "@connectrpc/connect";
import { AgentRole, RefusalReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { WithdrawSuggestionResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { Clients } from "./harness.js";
import { useTestServer } from "./server-fixture.js";
import { expectRefusal, sessionWithOffers, type WireRefusal } from "./suggest.js";

/** The contract's texts of withdraw_suggestion, copied exactly. */
export const WITHDRAW_TEXT = {
  helper: "withdraw_suggestion is only for the top-level agent.",
  noSession: "withdraw_suggestion requires an owning agent session",
  noTurn: "withdraw_suggestion: requires an open model turn",
  empty: (field: string) => `withdraw_suggestion: ${field} must not be empty`,
  tooLong: (field: string, limit: number, got: number) =>
    `withdraw_suggestion: ${field} must be at most ${limit} characters (got ${got})`,
  noOpenOffer: (title: string) => `withdraw_suggestion: no open suggestion is titled "${title}"`,
  success: (title: string) =>
    `Withdrew "${title}". It stays dismissed unless the user restores it.`,
} as const;

/** A withdraw call's context and arguments, with defaults that pass every check. */
export interface WithdrawInput {
  sessionId: string;
  title: string;
  reason?: string;
  turnId?: string;
  role?: AgentRole;
  toolCallId?: string;
}

let counter = 0;

/** Calls WithdrawSuggestion; each call gets its own turn unless told otherwise. */
export function withdraw(
  clients: Clients,
  input: WithdrawInput,
): Promise<WithdrawSuggestionResponse> {
  counter++;
  return clients.suggestions.withdrawSuggestion({
    context: {
      sessionId: input.sessionId,
      turnId: input.turnId ?? `withdraw-turn-${counter}`,
      role: input.role ?? AgentRole.TOP_LEVEL,
      toolCallId: input.toolCallId ?? "",
    },
    args: { title: input.title, reason: input.reason ?? "Done in this chat." },
  });
}

/** Asserts the NOT_FOUND refusal of a title no open offer has. */
export function expectNoOpenOffer(actual: WireRefusal, title: string): void {
  expectRefusal(actual, {
    message: WITHDRAW_TEXT.noOpenOffer(title),
    code: Code.NotFound,
    reason: RefusalReason.NO_OPEN_OFFER,
    domain: "withdraw_suggestion",
  });
}

/**
 * A test file's server for the withdraw suites, with the two helpers both use: a
 * session on the host with offers of the given titles (in order; answers their ids),
 * and one suggestion as GetSuggestion answers it.
 */
export function useWithdrawChats() {
  const t = useTestServer();
  const session = (...titles: string[]) => sessionWithOffers(t.clients, ...titles);
  const get = async (sessionId: string, suggestionId: string) =>
    (await t.clients.suggestions.getSuggestion({ sessionId, suggestionId })).suggestion;
  return { t, session, get };
}
