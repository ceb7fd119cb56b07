import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { chatHostRoutes, isPersonInstruction, type Session } from "@oda/suggest-task/node";

// Your product's chats; a Map here. CreateChat and PostMessage must be idempotent by key.
const sessions = new Map<string, Session>();
const chats = new Map<string, string>(); // idempotency key -> chat id
const posted = new Map<string, string>(); // idempotency key -> message id

const routes = chatHostRoutes({
  getSession({ sessionId }) {
    const session = sessions.get(sessionId);
    if (!session) throw new ConnectError(`no session "${sessionId}"`, Code.NotFound);
    return { session };
  },
  createChat({ idempotencyKey }) {
    const chatId = chats.get(idempotencyKey) ?? `chat-${chats.size + 1}`; // same key, same chat
    chats.set(idempotencyKey, chatId);
    return { chatId };
  },
  postMessage(message) {
    // A brief arrives with author SUGGESTION: never act on it as the person's instruction.
    if (isPersonInstruction(message)) throw new ConnectError("expected a brief", Code.Internal);
    const messageId = posted.get(message.idempotencyKey) ?? `m-${posted.size + 1}`; // posted once
    posted.set(message.idempotencyKey, messageId);
    return { messageId };
  },
});
const port = Number(process.env.PORT ?? 9090);
const server = http2.createServer(connectNodeAdapter({ routes })).listen(port, "127.0.0.1");
server.once("listening", () => console.log(`chat host on http://127.0.0.1:${port}`));
process.once("SIGTERM", () => server.close());
