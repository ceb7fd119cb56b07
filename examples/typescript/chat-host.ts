import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  chatHostRoutes,
  isPersonInstruction,
  type MessageAuthor,
  type Session,
} from "@oda/suggest-task/node";

// Your product's chats; Maps here. CreateChat and PostMessage must be idempotent by key.
const sessions = new Map<string, Session>();
const chats = new Map<string, string>(); // idempotency key -> chat id
const messages = new Map<string, { chatId: string; author: MessageAuthor; text: string }>();
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
  postMessage({ idempotencyKey, chatId, author, text }) {
    const messageId = posted.get(idempotencyKey) ?? `m-${posted.size + 1}`; // posted once
    posted.set(idempotencyKey, messageId);
    messages.set(messageId, { chatId, author, text });
    return { messageId };
  },
});

/** Before a person-only action (a goal): a brief's author is SUGGESTION, never the person. */
export function mayActOn(messageId: string): boolean {
  const message = messages.get(messageId);
  return message !== undefined && isPersonInstruction(message);
}

// The service calls the host over gRPC: serve HTTP/2 (h2c here; http2.createSecureServer for TLS).
const server = http2.createServer(connectNodeAdapter({ routes }));
server.listen(Number(process.env.PORT ?? 9090), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  console.log(`chat host on http://127.0.0.1:${port}`); // the service's CHAT_HOST_URL
});
