import { hash } from "node:crypto";

/*
 * The ids the embedded host derives from what callers send: the same request always
 * lands on the same chat, message or goal, so a retried call (a Start retried across an
 * upgrade, too) finds what an earlier one made, without any map from keys to ids; and no
 * id is ever the caller's text itself. Pinned by test/domain/derived-ids.test.ts.
 */

/** 128 bits of SHA-256, in hex. */
function digest(text: string): string {
  return hash("sha256", text, "hex").slice(0, 32);
}

/** The id of the chat the embedded host creates for an idempotency key. */
export function embeddedChatId(idempotencyKey: string): string {
  return `chat-${digest(idempotencyKey)}`;
}

/** The id of the message posted to a chat under an idempotency key. */
export function embeddedMessageId(chatId: string, idempotencyKey: string): string {
  return `msg-${digest(`${chatId}\n${idempotencyKey}`)}`;
}

/** The id of the goal a chat's message becomes. */
export function embeddedGoalId(chatId: string, messageId: string): string {
  return `goal-${digest(`${chatId}\n${messageId}`)}`;
}
