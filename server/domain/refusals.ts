import { Code } from "@connectrpc/connect";
import { RefusalReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { LIFETIME_LIMIT, OPEN_LIMIT, TURN_LIMIT } from "./limits.js";

/** The ErrorInfo domain of suggest_task's refusals. */
export const REFUSAL_DOMAIN = "suggest_task";

/**
 * The tools whose refusals carry a `SuggestTaskRefusal`; each name is also the ErrorInfo
 * domain and the prefix of its refusal texts (docs/contract.md).
 */
export type RefusingTool = typeof REFUSAL_DOMAIN | "withdraw_suggestion";

/** A refusal of suggest_task as its detail describes it. */
export type Refusal =
  | {
      reason:
        | RefusalReason.NOT_TOP_LEVEL
        | RefusalReason.NO_SESSION
        | RefusalReason.SCHEDULED_TASK_FOLDER
        | RefusalReason.NO_OPEN_TURN
        | RefusalReason.LIFETIME_LIMIT
        | RefusalReason.OPEN_LIMIT
        | RefusalReason.TURN_LIMIT;
    }
  | { reason: RefusalReason.FIELD_EMPTY; field: string; limit: number }
  | { reason: RefusalReason.FIELD_TOO_LONG; field: string; limit: number; got: number }
  /** A control character, or in a one-line field a bidirectional override (field-text.ts). */
  | { reason: RefusalReason.FIELD_CONTROL_CHARACTER; field: string; limit: number }
  /** withdraw_suggestion only: no open offer of the chat has the (trimmed) title. */
  | { reason: RefusalReason.NO_OPEN_OFFER; title: string }
  /** withdraw_suggestion over MCP, which names the offer by its id (docs/agents.md). */
  | { reason: RefusalReason.NO_OPEN_OFFER; suggestionId: string }
  /**
   * suggest_task's last check: an open offer of the chat, or one the person dismissed,
   * has the new offer's normalized title (`normalizedTitle`); `title` is the new
   * offer's trimmed title.
   */
  | {
      reason: RefusalReason.DUPLICATE_OPEN | RefusalReason.DUPLICATE_DISMISSED;
      title: string;
    };

/** What the caller is told of one refusal: the contract's text, a gRPC code, the limit. */
export interface RefusalAnswer {
  readonly message: string;
  readonly code: Code;
  readonly limit: number;
}

/** The refusals that carry no field, with their fixed answers. */
type FixedReason = Exclude<
  Refusal["reason"],
  | RefusalReason.FIELD_EMPTY
  | RefusalReason.FIELD_TOO_LONG
  | RefusalReason.FIELD_CONTROL_CHARACTER
  | RefusalReason.NO_OPEN_OFFER
  | RefusalReason.DUPLICATE_OPEN
  | RefusalReason.DUPLICATE_DISMISSED
>;

/**
 * The refusal table of suggest_task (docs/contract.md), in the order the checks run
 * (docs/contract.md): the first that fails answers. rpc/suggest-task.ts runs
 * them in this order; the field checks (8a empty, 8b too long, 8c a control character)
 * come last, for each field in the order the proto declares them. Strings are the contract's, exactly.
 */
export const SUGGEST_TASK_REFUSALS: ReadonlyMap<FixedReason, RefusalAnswer> = new Map([
  [
    RefusalReason.NOT_TOP_LEVEL,
    {
      message:
        "suggest_task is only for the top-level agent; report the follow-up in your result instead.",
      code: Code.PermissionDenied,
      limit: 0,
    },
  ],
  [
    RefusalReason.NO_SESSION,
    {
      message: "suggest_task requires an owning agent session",
      code: Code.FailedPrecondition,
      limit: 0,
    },
  ],
  [
    RefusalReason.SCHEDULED_TASK_FOLDER,
    {
      message:
        "suggest_task: this chat runs in a scheduled task folder, where no new chat can start; offer no suggestions here",
      code: Code.FailedPrecondition,
      limit: 0,
    },
  ],
  [
    RefusalReason.NO_OPEN_TURN,
    {
      message: "suggest_task: requires an open model turn",
      code: Code.FailedPrecondition,
      limit: 0,
    },
  ],
  [
    RefusalReason.LIFETIME_LIMIT,
    {
      message: `suggest_task: this chat already offered ${LIFETIME_LIMIT} suggestions; offer no more`,
      code: Code.ResourceExhausted,
      limit: LIFETIME_LIMIT,
    },
  ],
  [
    RefusalReason.OPEN_LIMIT,
    {
      message: `suggest_task: ${OPEN_LIMIT} suggestions already wait for the user; offer no more until one is started or dismissed`,
      code: Code.ResourceExhausted,
      limit: OPEN_LIMIT,
    },
  ],
  [
    RefusalReason.TURN_LIMIT,
    {
      message: "suggest_task: one suggestion per turn; this turn already offered one",
      code: Code.ResourceExhausted,
      limit: TURN_LIMIT,
    },
  ],
]);

/**
 * withdraw_suggestion's refusal table, in its check order (docs/contract.md
 * "WithdrawSuggestion's refusals"): the helper, the owning session, the open turn; then the fields
 * (4, texts as suggest_task's with the tool's name), then no open offer with the title.
 */
export const WITHDRAW_SUGGESTION_REFUSALS: ReadonlyMap<FixedReason, RefusalAnswer> = new Map([
  [
    RefusalReason.NOT_TOP_LEVEL,
    {
      message: "withdraw_suggestion is only for the top-level agent.",
      code: Code.PermissionDenied,
      limit: 0,
    },
  ],
  [
    RefusalReason.NO_SESSION,
    {
      message: "withdraw_suggestion requires an owning agent session",
      code: Code.FailedPrecondition,
      limit: 0,
    },
  ],
  [
    RefusalReason.NO_OPEN_TURN,
    {
      message: "withdraw_suggestion: requires an open model turn",
      code: Code.FailedPrecondition,
      limit: 0,
    },
  ],
]);

/**
 * The answer to one refusal of a tool: a fixed row of its table, a field's text (8a,
 * 8b, 8c), or withdraw_suggestion's missing title.
 */
export function describeRefusal(r: Refusal, tool: RefusingTool = REFUSAL_DOMAIN): RefusalAnswer {
  switch (r.reason) {
    case RefusalReason.FIELD_EMPTY:
      return {
        message: `${tool}: ${r.field} must not be empty`,
        code: Code.InvalidArgument,
        limit: r.limit,
      };
    case RefusalReason.FIELD_TOO_LONG:
      return {
        message: `${tool}: ${r.field} must be at most ${r.limit} characters (got ${r.got})`,
        code: Code.InvalidArgument,
        limit: r.limit,
      };
    case RefusalReason.FIELD_CONTROL_CHARACTER:
      return {
        message: `${tool}: ${r.field} must not contain control characters`,
        code: Code.InvalidArgument,
        limit: r.limit,
      };
    case RefusalReason.NO_OPEN_OFFER:
      return {
        message:
          "suggestionId" in r
            ? `${tool}: no open suggestion has id "${r.suggestionId}"`
            : `${tool}: no open suggestion is titled "${r.title}"`,
        code: Code.NotFound,
        limit: 0,
      };
    case RefusalReason.DUPLICATE_OPEN:
      return {
        message: `${tool}: "${r.title}" already waits for the user; offer something else`,
        code: Code.AlreadyExists,
        limit: 0,
      };
    case RefusalReason.DUPLICATE_DISMISSED:
      return {
        message: `${tool}: the user dismissed "${r.title}"; do not offer it again`,
        code: Code.AlreadyExists,
        limit: 0,
      };
    default: {
      const table = tool === REFUSAL_DOMAIN ? SUGGEST_TASK_REFUSALS : WITHDRAW_SUGGESTION_REFUSALS;
      const answer = table.get(r.reason);
      if (answer === undefined) throw new Error(`${tool} has no refusal ${r.reason}`);
      return answer;
    }
  }
}

/**
 * A title as the duplicate check compares it (docs/contract.md, SuggestTask's
 * refusals, row 9): trimmed, lower-cased, inner white space collapsed to one space. Computed
 * once, here, when an offer is made: the offer's record keeps it (`nt`) and
 * store/lua/offer-3.lua compares the values it is given, never normalizing itself.
 */
export function normalizedTitle(title: string): string {
  return title.trim().toLowerCase().replace(/\s+/g, " ");
}

/** The reference's success line for a recorded offer, with the trimmed title. */
export function successLine(title: string): string {
  return `Suggested "${title}". The user decides whether to start it; do not start it yourself.`;
}
