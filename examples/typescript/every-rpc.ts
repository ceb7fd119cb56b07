import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { AgentRole, createLocalHostClient, MessageAuthor } from "@oda/suggest-task/node";
import { baseUrl, client } from "./client.js";

const sessionId = `chat-${randomUUID()}`; // a new chat on every run
// The embedded chat host (served on the same port while CHAT_HOST_URL is unset) must know it.
const local = createLocalHostClient({ baseUrl });
await local.putSession({ session: { sessionId, workspaceId: "ws-1" } });

const { suggestion, result } = await client.suggestTask({
  context: { sessionId, turnId: "turn-1", role: AgentRole.TOP_LEVEL, toolCallId: "call-1" },
  args: { title: "Add retries", tldr: "Uploads fail on flaky links", brief: "Retry uploads ..." },
});
console.log(result); // Suggested "Add retries". The user decides whether to start it; ...
const suggestionId = suggestion?.id ?? "";

const { open, settled } = await client.listSuggestions({ sessionId }); // open: newest first
console.log(`${open.length} open, ${settled.length} settled`); // 1 open, 0 settled
await client.getSuggestion({ sessionId, suggestionId });
await client.dismissSuggestion({ sessionId, suggestionId });
await client.restoreSuggestion({ sessionId, suggestionId }); // open again
const { chatId } = await client.startSuggestion({ sessionId, suggestionId }); // the same chat every time
// client.draftSuggestion({ sessionId, suggestionId }) settles an open one as drafted.

const { chat } = await local.getChat({ chatId }); // the started chat: its first message is the brief
const brief = chat?.messages[0];
console.log(brief?.author === MessageAuthor.SUGGESTION); // true: not the person's words
try {
  await local.createGoal({ chatId, messageId: brief?.messageId ?? "" });
} catch (err) {
  console.log(ConnectError.from(err).code === Code.PermissionDenied); // true: a goal needs the person
}
