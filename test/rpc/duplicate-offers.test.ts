import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { describe, expect, test } from "vitest";
import { AgentRole, RefusalReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { logRecords } from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import {
  expectRefusal,
  nextTurnId,
  offeredRecords,
  offerOne,
  REFUSAL_TEXT,
  refusalOf,
} from "../support/suggest.js";

/*
 * The duplicate refusals (docs/contract.md, SuggestTask's refusals, row 9), through
 * the gRPC fast path and connect-node: every pinned text, code, reason and detail; the
 * check last in the order (the limits and the fields answer first); nothing recorded
 * and the turn left unused; and atomic with the other limits, also across instances.
 * Any sequence of offers and settlements: test/rpc/duplicate-model.test.ts.
 */

const a = useTestServer();
const b = useTestServer();

const connectClient = (url: string) =>
  createClient(SuggestionService, createConnectTransport({ baseUrl: url, httpVersion: "2" }));

const transports = [
  ["the gRPC fast path", () => a.clients.suggestions],
  ["connect-node (Connect protocol)", () => connectClient(a.url)],
] as const;

const openText = (title: string) =>
  `suggest_task: "${title}" already waits for the user; offer something else`;
const dismissedText = (title: string) =>
  `suggest_task: the user dismissed "${title}"; do not offer it again`;

async function newSession(): Promise<string> {
  const sessionId = uniqueId("dup");
  await putSession(a.clients, { sessionId });
  return sessionId;
}

describe.each(transports)("through %s", (_, client) => {
  const suggest = (sessionId: string, title: string, turnId = nextTurnId(), tldr = "Worth it") =>
    client().suggestTask({
      context: { sessionId, turnId, role: AgentRole.TOP_LEVEL },
      args: { title, tldr, brief: "Do it." },
    });

  test("each refusal's text, code, SuggestTaskRefusal and ErrorInfo; the new offer's trimmed title", async () => {
    const sessionId = await newSession();
    const first = await offerOne(a.clients, sessionId, "Add retries");
    expectRefusal(await refusalOf(suggest(sessionId, "\t ADD\u00a0 retries  ")), {
      message: openText("ADD\u00a0 retries"),
      code: Code.AlreadyExists,
      reason: RefusalReason.DUPLICATE_OPEN,
    });
    await a.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: first.id });
    expectRefusal(await refusalOf(suggest(sessionId, " add Retries")), {
      message: dismissedText("add Retries"),
      code: Code.AlreadyExists,
      reason: RefusalReason.DUPLICATE_DISMISSED,
    });
    // Punctuation is part of the title: another offer.
    expect((await suggest(sessionId, "Add retries.")).suggestion?.title).toBe("Add retries.");
  });

  test("a refused duplicate records nothing and leaves its turn unused", async () => {
    const sessionId = await newSession();
    await offerOne(a.clients, sessionId, "Bump deps");
    const before = await logRecords(a.redis, sessionId);
    const turnId = nextTurnId();
    expect((await refusalOf(suggest(sessionId, "bump deps", turnId))).message).toBe(
      openText("bump deps"),
    );
    expect(await logRecords(a.redis, sessionId)).toEqual(before);
    const res = await suggest(sessionId, "Pin the node version", turnId);
    expect(res.suggestion?.turnId).toBe(turnId);
  });

  test("last in the order: the turn, open and lifetime limits and the fields answer first", async () => {
    const sessionId = await newSession();
    const turnId = nextTurnId();
    await suggest(sessionId, "One", turnId);
    // The same turn: the turn limit, not the duplicate.
    expect((await refusalOf(suggest(sessionId, "one", turnId))).message).toBe(REFUSAL_TEXT.turn);
    // A field refusal before the duplicate.
    expect((await refusalOf(suggest(sessionId, "one", nextTurnId(), " "))).message).toBe(
      "suggest_task: tldr must not be empty",
    );
    await suggest(sessionId, "Two");
    await suggest(sessionId, "Three");
    expect((await refusalOf(suggest(sessionId, "one"))).message).toBe(REFUSAL_TEXT.open);
    // Ten offered (each drafted in turn, so none is open or dismissed): the lifetime limit.
    const s = a.clients.suggestions;
    for (const title of ["Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten"]) {
      const { open } = await s.listSuggestions({ sessionId });
      await s.draftSuggestion({ sessionId, suggestionId: open[0]?.id ?? "" });
      await suggest(sessionId, title);
    }
    expect((await refusalOf(suggest(sessionId, "ten"))).message).toBe(REFUSAL_TEXT.lifetime);
  });

  test("two concurrent offers of one title in different turns of one chat: one is recorded", async () => {
    for (let round = 0; round < 5; round++) {
      const sessionId = await newSession();
      const titles = ["Add retries", " add  RETRIES"];
      const answers = await Promise.allSettled(titles.map((title) => suggest(sessionId, title)));
      const recorded = answers.findIndex((r) => r.status === "fulfilled");
      expect(answers.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      // The other is refused with its own trimmed title.
      const loser = answers[1 - recorded];
      if (loser?.status !== "rejected") throw new Error("both were recorded");
      const refused = (titles[1 - recorded] as string).trim();
      expectRefusal(await refusalOf(Promise.reject(loser.reason)), {
        message: openText(refused),
        code: Code.AlreadyExists,
        reason: RefusalReason.DUPLICATE_OPEN,
      });
      const offered = await offeredRecords(a.redis, sessionId);
      expect(offered.map((r) => r.title)).toEqual([(titles[recorded] as string).trim()]);
    }
  });
});

test("concurrent offers of one title through two instances, one on each transport: one recorded", async () => {
  const sessionId = await newSession();
  const calls = [a.clients.suggestions, connectClient(b.url)].flatMap((c) =>
    ["Write the guide", "write the guide", "WRITE THE GUIDE"].map((title) =>
      c.suggestTask({
        context: { sessionId, turnId: nextTurnId(), role: AgentRole.TOP_LEVEL },
        args: { title, tldr: "Worth it", brief: "Do it." },
      }),
    ),
  );
  const answers = await Promise.allSettled(calls);
  expect(answers.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  for (const answer of answers) {
    if (answer.status === "fulfilled") continue;
    const refusal = await refusalOf(Promise.reject(answer.reason));
    expect([refusal.code, refusal.refusal?.reason]).toEqual([
      Code.AlreadyExists,
      RefusalReason.DUPLICATE_OPEN,
    ]);
    expect(["Write the guide", "write the guide", "WRITE THE GUIDE"].map(openText)).toContain(
      refusal.message,
    );
  }
  expect(await offeredRecords(a.redis, sessionId)).toHaveLength(1);
});
