import { createHash } from "node:crypto";
import { expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { configFromEnv } from "../../server/config.js";
import { loadScripts } from "../../server/store/scripts.js";
import { type Clients, putSession, uniqueId } from "../support/harness.js";
import { type MonitoredCommand, startMonitor } from "../support/monitor.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

/*
 * On a single Redis, with SINGLE_REDIS_SCRIPTS (off by default), an append of a workspace's
 * chat makes its inbox announcement in the same script (store/scripts.ts
 * `announcedForm`): one round trip where a cluster makes two; and a Start's holder on the
 * embedded host creates the chat, records `started` and posts the brief in one script
 * (lua/settleStartEmbedded-9.lua) where a cluster makes three calls. The same flow of
 * every write that announces (an offer, a dismissal, a restore, a Start, a withdrawal)
 * runs through two servers on one Redis of this file's own, one with those scripts and
 * one with calls of their own (as on a cluster), under MONITOR: the first sends each
 * `announce` and the append after it as the append's announced form, and the Start's
 * three as one, and nothing else changes, neither the other calls nor what the chat, its
 * lists, the started chat and the workspace's inbox end up holding.
 */

const redis = useOwnRedis();
const inAppend = useTestServer({
  redisUrl: () => redis.url,
  settings: { singleRedisScripts: true },
});
const separate = useTestServer({
  redisUrl: () => redis.url,
  settings: { singleRedisScripts: false },
});

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
  await inAppend.redis.echo(marker);
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

test("each announcement is made in the append after it, a Start's holder steps are one script, and the chat and its inbox end the same", async () => {
  const apart = await flow(separate.clients);
  const together = await flow(inAppend.clients);

  // Seven writes announce: three offers, the dismissal, the restore, the Start's
  // `started` and the withdrawal (refused once first for want of a token: only its
  // script finds the offer, and with it the workspace).
  expect(apart.scripts.filter((name) => name === "announce")).toHaveLength(7);
  const folded: string[] = [];
  for (const name of apart.scripts) {
    if (folded.at(-1) === "announce") folded[folded.length - 1] = `${name}Announced`;
    else folded.push(name);
  }
  // On the embedded host, the holder's CreateChat, `started` and PostMessage are one.
  const start = ["createChat", "settleStartAnnounced", "postMessage"];
  const i = folded.indexOf("createChat");
  expect(folded.slice(i, i + 3)).toEqual(start);
  folded.splice(i, 3, "settleStartEmbeddedAnnounced");
  expect(together.scripts).toEqual(folded);
  expect(together.scripts).toEqual([
    "offerAnnounced",
    "offerAnnounced",
    "offerAnnounced",
    "readLists",
    "settleAndReadAnnounced",
    "settleAndReadAnnounced",
    "beginStart",
    "settleStartEmbeddedAnnounced",
    "withdraw",
    "withdrawAnnounced",
    "readLists",
    // The inbox read finds the chat pending: read back from its log, and written.
    "inboxChat",
    "inboxPut",
  ]);

  expect(together.left).toEqual(apart.left);
  expect(together.left).toEqual({
    open: ["A:OPEN"],
    settled: ["B:STARTED", "C:DISMISSED"],
    inbox: ["true:A"],
    started: { title: "B", workspace: true, messages: ["SUGGESTION:Do the follow-up."] },
  });
});

test("SINGLE_REDIS_SCRIPTS: off by default (each script one session's keys), 1 turns it on", () => {
  expect(configFromEnv({}).singleRedisScripts).toBe(false);
  expect(configFromEnv({ SINGLE_REDIS_SCRIPTS: "1" }).singleRedisScripts).toBe(true);
  expect(configFromEnv({ SINGLE_REDIS_SCRIPTS: "0" }).singleRedisScripts).toBe(false);
  expect(() => configFromEnv({ SINGLE_REDIS_SCRIPTS: "no" })).toThrow(
    'SINGLE_REDIS_SCRIPTS must be 1, 0, true or false (got "no")',
  );
});
