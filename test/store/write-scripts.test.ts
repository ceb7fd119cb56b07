import { createHash } from "node:crypto";
import { expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { loadScripts } from "../../server/store/scripts.js";
import { type Clients, putSession, uniqueId } from "../support/harness.js";
import { type MonitoredCommand, startMonitor } from "../support/monitor.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

/*
 * One script per write, one way to call it: every write that announces in a workspace's
 * inbox (an offer, a dismissal, a restore, a Start, a withdrawal) sends its announcement
 * (lua/announce-2.lua) as a call of its own, then its append, and a Start's holder on the
 * embedded host sends CreateChat, the `started` step and PostMessage as three. The same
 * flow through a server on a Redis of this file's own, under MONITOR: the scripts it
 * sends for the chat, in order, and what the chat, its lists, the started chat and the
 * workspace's inbox end up holding.
 */

const redis = useOwnRedis();
const server = useTestServer({ redisUrl: () => redis.url });

/** Script names by the SHA-1 that EVALSHA sends. */
const scriptOf = new Map(
  loadScripts().map((s) => [createHash("sha1").update(s.lua).digest("hex"), s.name]),
);

/** Every write that announces, in one chat of a workspace; answers what it left. */
async function writes(clients: Clients, sessionId: string, workspaceId: string) {
  const s = clients.suggestions;
  const a = await offerOne(clients, sessionId, "A");
  const b = await offerOne(clients, sessionId, "B");
  await offerOne(clients, sessionId, "C");
  // Read, so that this instance knows the offers' workspace (lists-cache.ts `workspaceOf`).
  await s.listSuggestions({ sessionId });
  await s.dismissSuggestion({ sessionId, suggestionId: a.id });
  await s.restoreSuggestion({ sessionId, suggestionId: a.id });
  const { chatId } = await s.startSuggestion({ sessionId, suggestionId: b.id });
  const { chat } = await clients.local.getChat({ chatId });
  await s.withdrawSuggestion({
    context: { sessionId, turnId: uniqueId("turn"), role: AgentRole.TOP_LEVEL, toolCallId: "w" },
    args: { title: "C", reason: "Done here." },
  });
  const lists = await s.listSuggestions({ sessionId });
  const inbox = await s.listWorkspaceSuggestions({ workspaceId });
  const standing = (list: typeof lists.open) =>
    list.map((x) => `${x.title}:${SuggestionState[x.state]}`);
  return {
    open: standing(lists.open),
    settled: standing(lists.settled),
    inbox: inbox.suggestions.map((x) => `${x.sessionId === sessionId}:${x.title}`),
    started: {
      title: chat?.title,
      workspace: chat?.workspaceId === workspaceId,
      messages: chat?.messages.map((m) => `${MessageAuthor[m.author]}:${m.text}`),
    },
  };
}

/** The flow through one server: what it left, and the scripts it sent for the chat. */
async function flow(clients: Clients) {
  const sessionId = uniqueId("chat");
  const workspaceId = uniqueId("ws");
  await putSession(clients, { sessionId, workspaceId });
  const monitor = await startMonitor(redis.process.port);
  const left = await writes(clients, sessionId, workspaceId);
  const marker = uniqueId("end");
  await server.redis.echo(marker);
  await monitor.seen((c) => c.args.some((a) => a.toString() === marker));
  const commands = await monitor.stop();
  // A script's first run on a Redis is an EVAL of its text (ioredis, after NOSCRIPT).
  const sha = (c: MonitoredCommand) =>
    c.name === "eval"
      ? createHash("sha1")
          .update(c.args[0] ?? "")
          .digest("hex")
      : (c.args[0]?.toString() ?? "");
  const scripts = commands
    .filter((c) => c.source !== "lua" && (c.name === "evalsha" || c.name === "eval"))
    .filter((c) => c.args.some((a) => a.toString().includes(sessionId)))
    .map((c) => scriptOf.get(sha(c)) ?? "unknown");
  return { left, scripts };
}

test("each announcement is a call of its own before its append, a Start's holder steps are three, and the chat and its inbox end as the writes say", async () => {
  const { left, scripts } = await flow(server.clients);

  expect(scripts).toEqual([
    ...["announce", "offer", "announce", "offer", "announce", "offer", "readLists"],
    ...["announce", "settleAndRead", "announce", "settleAndRead", "beginStart"],
    // CreateChat leaves before the `started` step's announcement; the brief after it.
    ...["createChat", "announce", "settleStart", "postMessage"],
    // The withdrawal is refused once first for want of a token: only its script finds
    // the offer, and with it the workspace.
    ...["withdraw", "announce", "withdraw", "readLists"],
    // The inbox read finds the chat pending: read back from its log, and written.
    ...["inboxChat", "inboxPut"],
  ]);
  expect(left).toEqual({
    open: ["A:OPEN"],
    settled: ["B:STARTED", "C:DISMISSED"],
    inbox: ["true:A"],
    started: { title: "B", workspace: true, messages: ["SUGGESTION:Do the follow-up."] },
  });
});
