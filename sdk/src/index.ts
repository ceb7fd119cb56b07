/**
 * @oda/suggest-task: a typed client of the suggest-task service and the suggest_task tool
 * for model APIs. This core entry runs on any runtime connect-es runs on: it imports only
 * `@connectrpc/connect` and `@bufbuild/protobuf`, and its clients take any `Transport`.
 * `@oda/suggest-task/node` and `@oda/suggest-task/web` export all of it too, with clients
 * that also take a `baseUrl` (Node: gRPC over HTTP/2; web: Connect over `fetch`).
 *
 * - Clients: `createSuggestionClient`, `createChatHostClient`, `createLocalHostClient`.
 * - Errors: one class per `task-suggestion/*` code and `SuggestTaskRefusalError`, with a type
 *   guard each and `toSuggestionError` for errors from other clients; `errorCodeText` reads
 *   a `SuggestionErrorCode`'s text from the proto.
 * - The tool: `suggestTaskTool` (JSON Schema read from the proto's options), adapters for
 *   Anthropic, OpenAI and MCP, and `callSuggestTaskTool` for the runtime's side of a call;
 *   `withdrawSuggestionTool` and `callWithdrawSuggestionTool` beside them.
 * - Staying connected: retries of retry-safe calls (`retryInterceptor`, `isRetrySafe`), watches
 *   that reconnect and hide heartbeats (`WatchPolicy`).
 * - Report-back: `settlementNotes` turns ListSettlements' answer into the model's lines.
 * - Hosts: `chatHostRoutes` to serve `ChatHostService`, `isPersonInstruction`.
 * - Every generated message, enum and service of `oda.suggest.v1`, and `google.rpc.ErrorInfo`.
 *
 * @packageDocumentation
 */

export * from "../../gen/google/rpc/error_details_pb.js";
export * from "../../gen/oda/suggest/v1/chat_host_pb.js";
export * from "../../gen/oda/suggest/v1/suggestion_pb.js";
export * from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
export * from "../../gen/oda/suggest/v1/tool_options_pb.js";
export { type ChatHostImpl, chatHostRoutes, isPersonInstruction } from "./chat-host.js";
export {
  type ChatHostClient,
  createChatHostClient,
  createLocalHostClient,
  createSuggestionClient,
  type LocalHostClient,
  type PlatformClientOptions,
  platformClients,
  type SuggestionClient,
} from "./clients.js";
export {
  errorCodeOf,
  errorCodeText,
  isSuggestionNotFoundError,
  isSuggestionNotOpenError,
  isSuggestionOpenLimitError,
  isSuggestTaskRefusalError,
  isTaskSuggestionError,
  isWorkspaceMissingError,
  SuggestionNotFoundError,
  SuggestionNotOpenError,
  SuggestionOpenLimitError,
  SuggestTaskRefusalError,
  SuggestTaskServiceError,
  TaskSuggestionError,
  toSuggestionError,
  typedErrorsInterceptor,
  WorkspaceMissingError,
} from "./errors.js";
export {
  callDeadline,
  DEFAULT_RETRY_POLICY,
  isRetryableFailure,
  type RetryPolicy,
  retryInterceptor,
  type Settled,
} from "./retry.js";
export { isRetrySafe } from "./retry-safety.js";
export { settlementNotes } from "./settlement-notes.js";
export {
  type AnthropicTool,
  anthropicTool,
  type McpTool,
  mcpTool,
  type OpenAIFunctionTool,
  openAITool,
  suggestTaskTool,
  type ToolDefinition,
  type ToolInputSchema,
  type ToolStringProperty,
  toolDefinition,
  type VendorInputSchema,
} from "./tool.js";
export { readToolArguments } from "./tool-arguments.js";
export {
  callSuggestTaskTool,
  readSuggestTaskArguments,
  type SuggestTaskArguments,
  type SuggestTaskToolResult,
  type ToolCallContextInit,
} from "./tool-call.js";
export {
  readToolDeclaration,
  suggestTaskDeclaration,
  type ToolArgument,
  type ToolDeclaration,
} from "./tool-declaration.js";
export {
  bearerToken,
  type CallerOptions,
  type ClientOptions,
  clientTransport,
  type GivenTransportOptions,
  interceptTransport,
  type TokenSource,
  withTransport,
} from "./transport.js";
export { SDK_VERSION } from "./version.js";
export {
  DEFAULT_WATCH_POLICY,
  endOnLeave,
  survivingWatch,
  type WatchCallOptions,
  type WatchPolicy,
  type WatchReconnect,
} from "./watch.js";
export {
  callWithdrawSuggestionTool,
  readWithdrawSuggestionArguments,
  type WithdrawSuggestionArguments,
  type WithdrawSuggestionToolResult,
  withdrawSuggestionTool,
} from "./withdraw-tool.js";
