/**
 * The workspace inbox: a workspace of 10,000 chats holding 3,000 open
 * suggestions. Measures the server's CPU per call (from /proc) of the inbox's first page
 * against one chat's ListSuggestions (3 open + 7 settled), and of an offer into a chat
 * of a workspace (announced in its inbox) against an offer into a chat of none. The
 * arms take turns block by block, so that the machine's drift spreads over all alike;
 * compare them as ratios. Run alone: `node --import tsx bench/workspace-inbox.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { FolderKind } from "../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionService } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { EmbeddedChatHost } from "../server/host/embedded-host.js";
import { freePort } from "../server/redis/redis-server-process.js";
import { createRedisClient } from "../server/store/scripts.js";
import { type NewOffer, SuggestionStore } from "../server/store/suggestion-store.js";
import { startTestRedis } from "../test/support/store-server.js";
import { builtService, cpuSeconds, startNode } from "./measure.js";
import { inBatches } from "./prepare.js";

const CHATS = 10_000;
const OPEN = 3_000;
const BLOCK = Number(process.env.BENCH_INBOX_BLOCK ?? 250);
const ROUNDS = Number(process.env.BENCH_INBOX_ROUNDS ?? 30);
const IN_FLIGHT = 16;

/** What it measured: server CPU µs per call of each arm, and the ratios the issue asks. */
export interface WorkspaceInboxResult {
  readonly firstPageUs: number;
  readonly listSuggestionsUs: number;
  readonly firstPageVsList: number;
  readonly offerWithInboxUs: number;
  readonly offerWithoutInboxUs: number;
  readonly offerWithVsWithout: number;
  readonly firstPageSuggestions: number;
}

const offerOf = (i: number, turn: number): NewOffer => ({
  id: `o${turn}`,
  turnId: `t${turn}`,
  toolCallId: "",
  title: `Follow-up ${i}.${turn}`,
  tldr: "Worth doing next",
  brief: `Do follow-up ${i}, then report what changed.`,
});

/**
 * Writes the data straight through the store (its calls pipeline on one connection):
 * the workspace's chats (the first 3,000 keep their offer open, the rest settle it), 100
 * chats of 3 open + 7 settled for ListSuggestions, and fresh chats for the offers.
 */
async function prepare(redisUrl: string, runId: string) {
  const redis = createRedisClient(redisUrl);
  const store = new SuggestionStore(redis);
  const host = new EmbeddedChatHost(redis);
  const workspaceId = `bench-inbox-${runId}`;
  const ids = (prefix: string, n: number) =>
    Array.from({ length: n }, (_, i) => `${prefix}-${runId}-${i}`);
  const chats = ids("inbox", CHATS);
  await inBatches(chats, 1_000, async (sessionId) => {
    const i = Number(sessionId.split("-").at(-1));
    await store.offer(sessionId, offerOf(i, 0), false, workspaceId);
    if (i >= OPEN) await store.settle(sessionId, "o0", i % 2 === 0 ? "dismissed" : "drafted");
  });
  // Read once, so that the announced chats are read back: the steady state.
  await store.inbox.page(workspaceId, 50, "");
  const listChats = ids("inbox-list", 100);
  await inBatches(listChats, 100, async (sessionId) => {
    for (let t = 0; t < 10; t++) {
      await store.offer(sessionId, offerOf(0, t), false);
      if (t < 7) await store.settle(sessionId, `o${t}`, t % 2 === 0 ? "dismissed" : "drafted");
    }
  });
  const calls = BLOCK * ROUNDS;
  const fresh = { in: ids("inbox-fresh-in", calls), out: ids("inbox-fresh-out", calls) };
  const put = (ws: string) => (sessionId: string) =>
    host.putSession({ sessionId, workspaceId: ws, folder: FolderKind.NORMAL });
  await inBatches(fresh.in, 1_000, put(`bench-inbox-offers-${runId}`));
  await inBatches(fresh.out, 1_000, put(""));
  await redis.quit();
  return { workspaceId, listChats, fresh };
}

/** Runs `calls` calls, `IN_FLIGHT` at a time; answers the server CPU seconds they took. */
async function block(serverPid: number, calls: number, call: (i: number) => Promise<unknown>) {
  let next = 0;
  const before = cpuSeconds(serverPid);
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < calls) await call(next++);
    }),
  );
  return cpuSeconds(serverPid) - before;
}

/** Measures the four arms against a running service at `address`. */
export async function measureWorkspaceInbox(
  address: string,
  serverPid: number,
  redisUrl: string,
): Promise<WorkspaceInboxResult> {
  const runId = `r${Date.now()}`;
  const data = await prepare(redisUrl, runId);
  const client = createClient(
    SuggestionService,
    createGrpcTransport({ baseUrl: `http://${address}` }),
  );
  const offered = { in: 0, out: 0 };
  const suggest = (side: "in" | "out") => () => {
    const sessionId = data.fresh[side][offered[side]++] as string;
    return client.suggestTask({
      context: { sessionId, turnId: "t0", role: AgentRole.TOP_LEVEL, toolCallId: "" },
      args: offerOf(0, 0),
    });
  };
  let suggestions = 0;
  const arms: [string, (i: number) => Promise<unknown>][] = [
    [
      "firstPage",
      async () => {
        const res = await client.listWorkspaceSuggestions({ workspaceId: data.workspaceId });
        suggestions = res.suggestions.length;
      },
    ],
    ["list", (i) => client.listSuggestions({ sessionId: data.listChats[i % 100] as string })],
    ["offerIn", suggest("in")],
    ["offerOut", suggest("out")],
  ];
  // A warm-up block of the reads; the offers warm up in their first round.
  for (const [, call] of arms.slice(0, 2)) await block(serverPid, BLOCK, call);
  const cpu = new Map(arms.map(([name]) => [name, 0]));
  const counted = new Map(arms.map(([name]) => [name, 0]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < arms.length; k++) {
      const [name, call] = arms[(round + k) % arms.length] as (typeof arms)[number];
      const seconds = await block(serverPid, BLOCK, call);
      if (round === 0 && name.startsWith("offer")) continue;
      cpu.set(name, (cpu.get(name) ?? 0) + seconds);
      counted.set(name, (counted.get(name) ?? 0) + BLOCK);
    }
  }
  const us = (name: string) => ((cpu.get(name) ?? 0) / (counted.get(name) ?? 1)) * 1e6;
  const result = {
    firstPageUs: us("firstPage"),
    listSuggestionsUs: us("list"),
    offerWithInboxUs: us("offerIn"),
    offerWithoutInboxUs: us("offerOut"),
    firstPageSuggestions: suggestions,
  };
  return {
    ...result,
    firstPageVsList: result.firstPageUs / result.listSuggestionsUs,
    offerWithVsWithout: result.offerWithInboxUs / result.offerWithoutInboxUs,
  };
}

/** Alone: its own redis-server (as `npm start` runs it) and service. */
async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-bench-inbox-"));
  const redis = await startTestRedis({ dir });
  const port = await freePort();
  const server = await startNode(
    [builtService()],
    { PORT: String(port), REDIS_URL: redis.url, GRPC_FAST_PATH: "1", LOG_LEVEL: "info" },
    /listening on/,
  );
  try {
    console.log(
      JSON.stringify(await measureWorkspaceInbox(`127.0.0.1:${port}`, server.pid, redis.url)),
    );
  } finally {
    await server.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
