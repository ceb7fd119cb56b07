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
import { isValidId } from "../domain/ids.js";
import { normalizedTitle, type Refusal, successLine } from "../domain/refusals.js";
import { suggestTaskTool, type ToolSpec } from "../domain/tool-declaration.js";
import { checkToolFields } from "../domain/tool-fields.js";
import type { ChatHost } from "../host/chat-host.js";
import type { SuggestionStore } from "../store/suggestion-store.js";
import { dependencyError, refusalError } from "./errors.js";
import { checkedContext } from "./tool-call-context.js";

/** What the suggest_task handler needs. */
export interface SuggestTaskDeps {
  readonly store: SuggestionStore;
  readonly host: ChatHost;
  /** Makes the id of a new offer; random by default. */
  readonly newId?: () => string;
}

/** The model's arguments, trimmed. */
export interface TrimmedArgs {
  readonly title: string;
  readonly tldr: string;
  readonly brief: string;
}

// The code-point count of the field rule, where callers of checkArgs have found it.
export { codePoints } from "../domain/tool-fields.js";

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
  return { trimmed, refusal: checkToolFields(trimmed, spec) };
}

/**
 * The suggest_task tool. Request shape first (INVALID_ARGUMENT), then the eight
 * checks in order, the first that fails answering with the contract's refusal, then
 * the duplicate check last (ALREADY_EXISTS); checks 5 to 7, the duplicate check and the
 * append are one atomic script (lua/offer-3.lua), which compares the normalized title
 * made here.
 */
export async function suggestTask(
  deps: SuggestTaskDeps,
  request: SuggestTaskRequest,
): Promise<SuggestTaskResponse> {
  const context = checkedContext(request.context);
  const { sessionId, turnId, toolCallId } = context;

  // Check 1: anything but TOP_LEVEL is a helper, also UNSPECIFIED (a runtime that sets no
  // role) and a number this build does not know (test/rpc/suggest-task-rules.test.ts).
  if (context.role !== AgentRole.TOP_LEVEL) {
    throw refusalError({ reason: RefusalReason.NOT_TOP_LEVEL });
  }
  if (sessionId === "") {
    throw refusalError({ reason: RefusalReason.NO_SESSION });
  }
  const session = await findSession(deps.host, sessionId);
  if (session === undefined) {
    throw refusalError({ reason: RefusalReason.NO_SESSION });
  }
  if (session.folder === FolderKind.SCHEDULED_TASK) {
    throw refusalError({ reason: RefusalReason.SCHEDULED_TASK_FOLDER });
  }
  if (turnId === "") {
    throw refusalError({ reason: RefusalReason.NO_OPEN_TURN });
  }

  const { trimmed, refusal } = checkArgs(request.args);
  let outcome: Awaited<ReturnType<SuggestionStore["offer"]>>;
  try {
    outcome = await deps.store.offer(
      sessionId,
      {
        id: (deps.newId ?? randomUUID)(),
        turnId,
        toolCallId,
        ...trimmed,
        normalizedTitle: normalizedTitle(trimmed.title),
      },
      refusal !== undefined,
      // A workspace id the host should never give is recorded as none, not made a key.
      isValidId(session.workspaceId) ? session.workspaceId : "",
    );
  } catch (err) {
    throw dependencyError(err, "the suggestion store");
  }
  switch (outcome.kind) {
    case "lifetime-limit":
      throw refusalError({ reason: RefusalReason.LIFETIME_LIMIT });
    case "open-limit":
      throw refusalError({ reason: RefusalReason.OPEN_LIMIT });
    case "turn-limit":
      throw refusalError({ reason: RefusalReason.TURN_LIMIT });
    case "quota-ok":
      throw refusalError(refusal ?? { reason: RefusalReason.NO_OPEN_TURN });
    case "duplicate-open":
      throw refusalError({ reason: RefusalReason.DUPLICATE_OPEN, title: trimmed.title });
    case "duplicate-dismissed":
      throw refusalError({ reason: RefusalReason.DUPLICATE_DISMISSED, title: trimmed.title });
    case "recorded":
    case "duplicate":
      return create(SuggestTaskResponseSchema, {
        suggestion: outcome.suggestion,
        result: successLine(outcome.suggestion.title),
      });
  }
}

/**
 * The host's session, or undefined when it knows none (NOT_FOUND); any other failure of
 * the host is UNAVAILABLE. Shared by the tools' owning-session check.
 */
export async function findSession(host: ChatHost, sessionId: string) {
  try {
    const { session } = await host.getSession({ sessionId });
    return session;
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.NotFound) return undefined;
    throw dependencyError(err, "the chat host");
  }
}
