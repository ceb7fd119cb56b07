import { create } from "@bufbuild/protobuf";
import { ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  RefusalReason,
  type Suggestion,
  SuggestionState,
  SuggestTaskRefusalSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type ListSuggestionsRequest,
  ListSuggestionsRequestSchema,
  type ListSuggestionsResponse,
  SuggestionService,
  type SuggestTaskRequest,
  SuggestTaskRequestSchema,
  type SuggestTaskResponse,
  type WithdrawSuggestionRequest,
  WithdrawSuggestionRequestSchema,
  type WithdrawSuggestionResponse,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { settlementNote } from "../domain/settlement-notes.js";
import {
  type McpToolEntry,
  mcpToolEntry,
  suggestTaskTool,
  type ToolSpec,
  withdrawSuggestionTool,
} from "../domain/tool-declaration.js";
import { type CallRoute, type PipelineOptions, wrapUnary } from "../pipeline/call-pipeline.js";
import { refusalError } from "../rpc/errors.js";
import type { McpCallContext } from "./mcp-context.js";

/** What a tool call answers the model: MCP's `CallToolResult`, text and structured. */
export interface ToolResult {
  [key: string]: unknown;
  readonly content: { readonly type: "text"; readonly text: string }[];
  readonly structuredContent?: Record<string, unknown>;
  readonly isError?: boolean;
}

/** The `list_suggestions` tool: no arguments (docs/agents.md). */
const LIST_SUGGESTIONS: McpToolEntry = {
  name: "list_suggestions",
  description:
    "List the follow-ups this chat offered, open and settled, each with where it stands and, once the user acted on it, what they did.",
  inputSchema: { type: "object", properties: {}, required: [], additionalProperties: false },
};

/** The tools, as `tools/list` answers them, in this order. */
export const MCP_TOOLS: readonly McpToolEntry[] = [
  mcpToolEntry(suggestTaskTool),
  mcpToolEntry(withdrawSuggestionTool),
  LIST_SUGGESTIONS,
];

/** The RPC each tool runs, and the procedure it is logged, counted and granted as. */
const ROUTES = {
  suggest_task: route("suggest_task", SuggestionService.method.suggestTask),
  withdraw_suggestion: route("withdraw_suggestion", SuggestionService.method.withdrawSuggestion),
  list_suggestions: route("list_suggestions", SuggestionService.method.listSuggestions),
} as const;

/** The name a tool is called by. */
export type ToolName = keyof typeof ROUTES;

/** The procedure of a request to /mcp that names no tool (a body that does not parse). */
export const MCP_ROUTE: CallRoute = {
  service: SuggestionService,
  method: SuggestionService.method.suggestTask,
  procedure: "/mcp",
};

function route(name: string, method: CallRoute["method"]): CallRoute {
  return { service: SuggestionService, method, procedure: `/mcp/${name}` };
}

/** The route of `name`, or the generic one when it names no tool. */
export function routeOf(name: string): CallRoute {
  return isToolName(name) ? ROUTES[name] : MCP_ROUTE;
}

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(ROUTES, name);
}

/** One unary RPC as a function. */
type Unary<Q, R> = (request: Q, context: HandlerContext) => Promise<R>;

/** The RPCs the tools run, each already through the call pipeline. */
export interface McpToolCalls {
  readonly suggestTask: Unary<SuggestTaskRequest, SuggestTaskResponse>;
  readonly withdrawSuggestion: Unary<WithdrawSuggestionRequest, WithdrawSuggestionResponse>;
  readonly listSuggestions: Unary<ListSuggestionsRequest, ListSuggestionsResponse>;
}

/**
 * The tools' RPCs: the SuggestionService implementation gRPC and Connect serve (with its
 * tenant rule), each run through the same call pipeline under the tool's procedure
 * (`/mcp/suggest_task`), so that auth, grants, deadlines, the call log and
 * `suggest_calls_total` apply to it as to every call. `list_suggestions` of a call with
 * no chat behind it is the reference's `suggest_task requires an owning agent session`.
 */
export function mcpToolCalls(
  impl: ServiceImpl<typeof SuggestionService>,
  pipeline: PipelineOptions,
): McpToolCalls {
  // The handlers answer messages (rpc/*.ts build them with `create`), typed as their init shapes.
  const suggestTask = impl.suggestTask as Unary<SuggestTaskRequest, SuggestTaskResponse>;
  const withdraw = impl.withdrawSuggestion as Unary<
    WithdrawSuggestionRequest,
    WithdrawSuggestionResponse
  >;
  const list = impl.listSuggestions as Unary<ListSuggestionsRequest, ListSuggestionsResponse>;
  return {
    suggestTask: wrapUnary(ROUTES.suggest_task, suggestTask, pipeline),
    withdrawSuggestion: wrapUnary(ROUTES.withdraw_suggestion, withdraw, pipeline),
    listSuggestions: wrapUnary(
      ROUTES.list_suggestions,
      async (request: ListSuggestionsRequest, context) => {
        if (request.sessionId === "") throw refusalError({ reason: RefusalReason.NO_SESSION });
        return list(request, context);
      },
      pipeline,
    ),
  };
}

/** The model's arguments for `spec`, or the problem with them (a wrong type, an unknown key). */
export function readArguments(
  spec: ToolSpec | undefined,
  tool: string,
  args: Readonly<Record<string, unknown>> | undefined,
): { readonly values: Readonly<Record<string, string>> } | { readonly problem: string } {
  const fields = spec?.fields ?? [];
  const values: Record<string, string> = {};
  for (const key of Object.keys(args ?? {})) {
    if (!fields.some((field) => field.name === key)) {
      return { problem: `${tool}: unknown argument ${JSON.stringify(key)}` };
    }
  }
  for (const field of fields) {
    const value = args?.[field.name];
    if (value !== undefined && value !== null && typeof value !== "string") {
      return { problem: `${tool}: ${field.name} must be a string` };
    }
    values[field.name] = value ?? "";
  }
  return { values };
}

/** The declaration of a tool's arguments; list_suggestions takes none. */
export function specOf(name: ToolName): ToolSpec | undefined {
  if (name === "suggest_task") return suggestTaskTool;
  if (name === "withdraw_suggestion") return withdrawSuggestionTool;
  return undefined;
}

/**
 * Runs one tool through its RPC and answers what the model sees: a recorded offer's (or
 * withdrawal's) line with `structuredContent` `{ suggestion_id }`; the chat's offers
 * for `list_suggestions`; a refusal as `isError` with the refusal's exact text. Any other
 * failure is thrown as it is (the transport's JSON-RPC error).
 */
export async function runTool(
  calls: McpToolCalls,
  name: ToolName,
  values: Readonly<Record<string, string>>,
  context: McpCallContext,
  handlerContext: HandlerContext,
): Promise<ToolResult> {
  try {
    switch (name) {
      case "suggest_task": {
        const request = create(SuggestTaskRequestSchema, { context, args: values });
        return recorded(await calls.suggestTask(request, handlerContext));
      }
      case "withdraw_suggestion": {
        const request = create(WithdrawSuggestionRequestSchema, { context, args: values });
        return recorded(await calls.withdrawSuggestion(request, handlerContext));
      }
      case "list_suggestions": {
        const request = create(ListSuggestionsRequestSchema, { sessionId: context.sessionId });
        return listed(await calls.listSuggestions(request, handlerContext));
      }
    }
  } catch (err) {
    const error = ConnectError.from(err);
    if (isRefusal(error)) return toolError(error.rawMessage);
    throw error;
  }
}

/** A result the model reads as the tool's failure: `isError` with `text`. */
export function toolError(text: string): ToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

function isRefusal(error: ConnectError): boolean {
  try {
    return error.findDetails(SuggestTaskRefusalSchema).length > 0;
  } catch {
    return false;
  }
}

function recorded(response: { suggestion?: Suggestion | undefined; result: string }): ToolResult {
  return {
    content: [{ type: "text", text: response.result }],
    structuredContent: { suggestion_id: response.suggestion?.id ?? "" },
  };
}

/** The names of the states, as `list_suggestions` shows them. */
const STATE_NAMES: Readonly<Partial<Record<SuggestionState, string>>> = {
  [SuggestionState.OPEN]: "open",
  [SuggestionState.STARTED]: "started",
  [SuggestionState.DRAFTED]: "drafted",
  [SuggestionState.DISMISSED]: "dismissed",
};

/**
 * The chat's offers: open ones newest first, then settled ones in offer order, each with
 * its id, title, state and, when settled, its line (domain/settlement-notes.ts); as
 * `structuredContent` and, for clients that read only text, the same as JSON text.
 */
function listed(response: ListSuggestionsResponse): ToolResult {
  const suggestions = [...response.open, ...response.settled].map((s) => {
    const note = settlementNote(s);
    return {
      suggestion_id: s.id,
      title: s.title,
      state: STATE_NAMES[s.state] ?? "unspecified",
      ...(note === undefined ? {} : { note }),
    };
  });
  const structuredContent = { suggestions };
  return {
    content: [{ type: "text", text: JSON.stringify(structuredContent) }],
    structuredContent,
  };
}
