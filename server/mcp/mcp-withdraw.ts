import { create } from "@bufbuild/protobuf";
import { ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  RefusalReason,
  type Suggestion,
  SuggestionState,
  SuggestTaskRefusalSchema,
  type ToolCallContext,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type ListSuggestionsRequest,
  ListSuggestionsRequestSchema,
  type ListSuggestionsResponse,
  type WithdrawSuggestionRequest,
  WithdrawSuggestionRequestSchema,
  type WithdrawSuggestionResponse,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import {
  type McpToolEntry,
  mcpToolEntry,
  type ToolSpec,
  withdrawSuggestionTool,
} from "../domain/tool-declaration.js";
import { refusalError } from "../rpc/errors.js";

/** The reason a withdrawal records when the model gives none (docs/agents.md). */
export const DEFAULT_WITHDRAW_REASON = "Withdrawn by the agent.";

/** The most characters of an id (domain/ids.ts). */
const ID_MAX = 128;

const reasonField = withdrawSuggestionTool.fields.find((field) => field.name === "reason");

/**
 * The MCP `withdraw_suggestion`'s arguments: the offer by its id, as `suggest_task` and
 * `list_suggestions` give it, where the RPC (and the SDK's tool) name it by its title.
 */
export const withdrawByIdTool: ToolSpec = {
  name: withdrawSuggestionTool.name,
  description: withdrawSuggestionTool.description,
  fields: [
    {
      name: "suggestion_id",
      jsonName: "suggestionId",
      description:
        "The id of the suggestion to withdraw, as suggest_task or list_suggestions gave it.",
      maxCodePoints: ID_MAX,
    },
    {
      name: "reason",
      jsonName: "reason",
      description: "Why it is no longer worth starting, at most 240 characters.",
      maxCodePoints: reasonField?.maxCodePoints ?? 240,
    },
  ],
};

/** Its `tools/list` entry: `suggestion_id` required, `reason` optional. */
export const WITHDRAW_BY_ID: McpToolEntry = {
  ...mcpToolEntry(withdrawByIdTool),
  inputSchema: { ...mcpToolEntry(withdrawByIdTool).inputSchema, required: ["suggestion_id"] },
};

/** One MCP withdrawal: the call's context, the offer's id, the model's reason (may be empty). */
export interface WithdrawByIdRequest {
  readonly context: ToolCallContext;
  readonly suggestionId: string;
  readonly reason: string;
}

type Unary<Q, R> = (request: Q, context: HandlerContext) => Promise<R>;

/** The two RPCs a withdrawal by id runs (the tenant-guarded SuggestionService's). */
export interface WithdrawRpcs {
  readonly list: Unary<ListSuggestionsRequest, ListSuggestionsResponse>;
  readonly withdraw: Unary<WithdrawSuggestionRequest, WithdrawSuggestionResponse>;
}

/**
 * Withdraws the calling chat's offer `suggestionId` through the WithdrawSuggestion RPC,
 * which names it by its title: ListSuggestions (with its tenant rule) finds the offer in
 * the chat, and the RPC runs with its title, so that every rule, refusal and the retry
 * answer stay the RPC's. The RPC takes the newest open offer of a title, so it is given
 * the title only when that is this offer; or, for a retried call (a `tool_call_id`), the
 * title of this offer once settled when no open offer shares it, so that the RPC answers
 * the first result and can withdraw nothing else. Otherwise the RPC runs with no title:
 * its checks of the role, the chat and the turn answer first, as for any withdrawal, and
 * its missing title then stands for `no open suggestion has id "<id>"` (NOT_FOUND), the
 * answer to an id of no open offer of the chat (another workspace's included, which the
 * list does not show). An id is only compared with the chat's, never a key.
 */
export async function withdrawById(
  rpcs: WithdrawRpcs,
  request: WithdrawByIdRequest,
  context: HandlerContext,
): Promise<WithdrawSuggestionResponse> {
  const { sessionId, toolCallId } = request.context;
  // No chat: the RPC's own refusal, whatever the title.
  const offers =
    sessionId === ""
      ? undefined
      : await rpcs.list(create(ListSuggestionsRequestSchema, { sessionId }), context);
  const title = titleFor(
    request.suggestionId,
    offers?.open ?? [],
    offers?.settled ?? [],
    toolCallId !== "",
  );
  const reason = request.reason.trim() === "" ? DEFAULT_WITHDRAW_REASON : request.reason;
  try {
    return await rpcs.withdraw(
      create(WithdrawSuggestionRequestSchema, {
        context: request.context,
        args: { title, reason },
      }),
      context,
    );
  } catch (err) {
    if (!lookedUpNothing(ConnectError.from(err))) throw err;
    if (request.suggestionId === "") {
      throw refusalError(
        { reason: RefusalReason.FIELD_EMPTY, field: "suggestion_id", limit: ID_MAX },
        "withdraw_suggestion",
      );
    }
    throw refusalError(
      { reason: RefusalReason.NO_OPEN_OFFER, suggestionId: request.suggestionId },
      "withdraw_suggestion",
    );
  }
}

/** The title to give the RPC for `id` (see `withdrawById`); empty when none fits. */
function titleFor(
  id: string,
  open: readonly Suggestion[],
  settled: readonly Suggestion[],
  retryable: boolean,
): string {
  const offer = open.find((s) => s.id === id);
  if (offer !== undefined) {
    // Open offers come newest first, the order in which the RPC looks a title up.
    return open.find((s) => s.title === offer.title) === offer ? offer.title : "";
  }
  const past = settled.find((s) => s.id === id && s.state === SuggestionState.DISMISSED);
  if (retryable && past !== undefined && !open.some((s) => s.title === past.title)) {
    return past.title;
  }
  return "";
}

/** The RPC's refusal of the missing title, or of no open offer with the title given. */
function lookedUpNothing(error: ConnectError): boolean {
  let refusal: { reason: RefusalReason; field: string } | undefined;
  try {
    [refusal] = error.findDetails(SuggestTaskRefusalSchema);
  } catch {
    return false;
  }
  if (refusal === undefined) return false;
  return (
    refusal.reason === RefusalReason.NO_OPEN_OFFER ||
    (refusal.reason === RefusalReason.FIELD_EMPTY && refusal.field === "title")
  );
}
