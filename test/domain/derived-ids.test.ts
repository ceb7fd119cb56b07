import { describe, expect, it } from "vitest";
import { startIdempotencyKeys } from "../../server/domain/started-chat.js";
import {
  embeddedChatId,
  embeddedGoalId,
  embeddedMessageId,
} from "../../server/host/embedded-ids.js";

/*
 * The keys and ids a Start derives are how a retried Start finds the chat and the brief
 * an earlier one made: a Start retried across an upgrade, or served by an instance of
 * another version, must derive the same ones, or the person gets a second chat. These
 * are the values every version so far has derived (SHA-256 of the same text).
 */
describe("a Start's derived keys and ids", () => {
  const keys = startIdempotencyKeys("chat-a1", "7f3c2a9e-0b1d-4c5e-8f60-1a2b3c4d5e6f");

  it("keys the host's CreateChat and PostMessage by the session and the suggestion", () => {
    expect(keys).toEqual({
      chat: "suggest-task:chat:8UipnGEFojOaJjEDi4xGtmrMv0QButPLSbwYQJbcrEQ",
      brief: "suggest-task:brief:8UipnGEFojOaJjEDi4xGtmrMv0QButPLSbwYQJbcrEQ",
    });
    expect(startIdempotencyKeys("chat-a2", "7f3c2a9e-0b1d-4c5e-8f60-1a2b3c4d5e6f").chat).not.toBe(
      keys.chat,
    );
  });

  it("gives the embedded host's chat, message and goal the same ids from the same keys", () => {
    const chatId = embeddedChatId(keys.chat);
    expect(chatId).toBe("chat-5ad34f518ddc31a4a8afa7876fac4343");
    const messageId = embeddedMessageId(chatId, keys.brief);
    expect(messageId).toBe("msg-32771e0f9456c5fa79d671df18ba8260");
    expect(embeddedGoalId(chatId, messageId)).toBe("goal-35a949accfc97764212fc8868b38def1");
  });
});
