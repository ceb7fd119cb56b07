import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  AgentRole,
  RefusalReason,
  type SuggestTaskArgs,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type SuggestTaskRequest,
  type SuggestTaskResponse,
  SuggestTaskResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { checkOptionalId, checkRuntimeId } from "../domain/ids.js";
import { type Refusal, successLine } from "../domain/refusals.js";
import { suggestTaskTool, type ToolSpec } from "../domain/tool-declaration.js";
import type { ChatHost } from "../host/chat-host.js";
import type { EmbeddedChatHost } from "../host/embedded-host.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { dependencyError, refusalError } from "./errors.js";

/** What the suggest_task handler needs. */
export interface SuggestTaskDeps {
  readonly store: SuggestionStore;
  readonly host: ChatHost;
  /** Makes the id of a new offer; random by default. */
  readonly newId?: () => string;
  /**
   * The embedded host, when it is the chat host: its sessions live beside the store's
   * records, so the session checks and the offer are one script (`offerInSession`).
   */
  readonly embeddedHost?: EmbeddedChatHost | undefined;
}

/** The model's arguments, trimmed. */
export interface TrimmedArgs {
  readonly title: string;
  readonly tldr: string;
  readonly brief: string;
}

/** Unicode code points of a string: an emoji counts 1. */
export function codePoints(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

/**
 * Trims the arguments (JavaScript `trim`) and checks them in declaration order
 * (title, tldr, brief), each for emptiness before length, with the limits the proto
 * declares. Answers the first refusal, or undefined when all fit.
 */
export function checkArgs(
  args: SuggestTaskArgs | undefined,
  spec: ToolSpec = suggestTaskTool,
): { trimmed: TrimmedArgs; refusal: Refusal | undefined } {
  const trimmed = {
    title: (args?.title ?? "").trim(),
    tldr: (args?.tldr ?? "").trim(),
    brief: (args?.brief ?? "").trim(),
  };
  for (const field of spec.fields) {
    const value = trimmed[field.name as keyof TrimmedArgs];
    if (value === "") {
      return {
        trimmed,
        refusal: {
          reason: RefusalReason.FIELD_EMPTY,
          field: field.name,
          limit: field.maxCodePoints,
        },
      };
    }
    const got = codePoints(value);
    if (got > field.maxCodePoints) {
      return {
        trimmed,
        refusal: {
          reason: RefusalReason.FIELD_TOO_LONG,
          field: field.name,
          limit: field.maxCodePoints,
          got,
        },
      };
    }
  }
  return { trimmed, refusal: undefined };
}

/**
 * The suggest_task tool. Request shape first (INVALID_ARGUMENT), then the design's eight
 * checks in order, the first that fails answering with the reference's refusal; checks
 * 5 to 7 and the append are one atomic script (lua/offer-3.lua).
 */
export async function suggestTask(
  deps: SuggestTaskDeps,
  request: SuggestTaskRequest,
): Promise<SuggestTaskResponse> {
  const context = request.context;
  if (context === undefined) {
    throw new ConnectError("context is required", Code.InvalidArgument);
  }
  const sessionId = checkOptionalId("context.session_id", context.sessionId);
  const turnId = checkRuntimeId("context.turn_id", context.turnId);
  const toolCallId = checkRuntimeId("context.tool_call_id", context.toolCallId);

  // Check 1: anything but TOP_LEVEL is a helper, also UNSPECIFIED (a runtime that sets no
  // role) and a number this build does not know (test/rpc/suggest-task-rules.test.ts).
  if (context.role !== AgentRole.TOP_LEVEL) {
    throw refusalError({ reason: RefusalReason.NOT_TOP_LEVEL });
  }
  if (sessionId === "") {
    throw refusalError({ reason: RefusalReason.NO_SESSION });
  }
  // With the embedded host, checks 2 and 3 run in the offer's own script (one round trip).
  const inOneScript = deps.embeddedHost !== undefined && turnId !== "";
  if (!inOneScript) {
    const session = await findSession(deps.host, sessionId);
    if (session === undefined) {
      throw refusalError({ reason: RefusalReason.NO_SESSION });
    }
    if (session.folder === FolderKind.SCHEDULED_TASK) {
      throw refusalError({ reason: RefusalReason.SCHEDULED_TASK_FOLDER });
    }
  }
  if (turnId === "") {
    throw refusalError({ reason: RefusalReason.NO_OPEN_TURN });
  }

  const { trimmed, refusal } = checkArgs(request.args);
  let outcome: Awaited<ReturnType<SuggestionStore["offerInSession"]>>;
  try {
    const offer = { id: (deps.newId ?? randomUUID)(), turnId, toolCallId, ...trimmed };
    outcome = inOneScript
      ? await deps.store.offerInSession(sessionId, offer, refusal !== undefined)
      : await deps.store.offer(sessionId, offer, refusal !== undefined);
  } catch (err) {
    throw dependencyError(err, "the suggestion store");
  }
  switch (outcome.kind) {
    case "no-session":
      throw refusalError({ reason: RefusalReason.NO_SESSION });
    case "scheduled-task-folder":
      throw refusalError({ reason: RefusalReason.SCHEDULED_TASK_FOLDER });
    case "lifetime-limit":
      throw refusalError({ reason: RefusalReason.LIFETIME_LIMIT });
    case "open-limit":
      throw refusalError({ reason: RefusalReason.OPEN_LIMIT });
    case "turn-limit":
      throw refusalError({ reason: RefusalReason.TURN_LIMIT });
    case "quota-ok":
      throw refusalError(refusal ?? { reason: RefusalReason.NO_OPEN_TURN });
    case "recorded":
    case "duplicate":
      return create(SuggestTaskResponseSchema, {
        suggestion: outcome.suggestion,
        result: successLine(outcome.suggestion.title),
      });
  }
}

/** The host's session, or undefined when it knows none (NOT_FOUND). */
async function findSession(host: ChatHost, sessionId: string) {
  try {
    const { session } = await host.getSession({ sessionId });
    return session;
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.NotFound) return undefined;
    throw dependencyError(err, "the chat host");
  }
}
