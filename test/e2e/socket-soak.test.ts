import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ChatHostService, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import {
  type Clients,
  eventually,
  grpcClients,
  putSession,
  type ServiceProcess,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { closeWaitOn, openFilesOf } from "../support/process-files.js";
import { offer } from "../support/suggest.js";
import { churnH1Watches, churnWatches } from "../support/watch-churn.js";

// A soak: for 75 s a few agents offer (each round into a new chat, on a new connection) while
// watchers open and cancel watches over HTTP/2 (past node's limit on reset streams, so
// the service sends GOAWAYs) and HTTP/1.1, and a reader reconnects its watch. The
// service's open files stay flat, and once the clients have left they are back to
// their count before, give or take a few, with no socket in CLOSE-WAIT.
const SOAK_MS = 75_000;
/** Descriptors that may come and go on their own (Redis reconnecting, a log file). */
const SLACK = 4;

let service: ServiceProcess;
beforeAll(async () => {
  service = await spawnService(sharedRedisUrl());
});
afterAll(() => service.kill("SIGTERM"));

/** Runs `round` again and again until `until`; answers how many rounds ran. */
async function repeat(until: number, round: (i: number) => Promise<unknown>): Promise<number> {
  let i = 0;
  while (Date.now() < until) await round(i++);
  return i;
}

/** A connect-es client on a connection of its own, which `leave` closes. */
function ownConnection(url: string): Clients & { leave: () => void } {
  const manager = new Http2SessionManager(url);
  const transport = createGrpcTransport({ baseUrl: url, sessionManager: manager });
  return {
    transport,
    suggestions: createClient(SuggestionService, transport),
    local: createClient(LocalHostService, transport),
    host: createClient(ChatHostService, transport),
    leave: () => manager.abort(),
  };
}

/**
 * One agent on a connection of its own: a new chat, three offers into it (a chat holds
 * three waiting offers at most).
 */
async function agentRound(url: string): Promise<number> {
  const client = ownConnection(url);
  const sessionId = uniqueId();
  let offered = 0;
  try {
    await putSession(client, { sessionId });
    for (let i = 0; i < 3; i++) {
      // Under load a call may miss its deadline: the soak is about the connections.
      const res = await offer(client, { sessionId }).catch(() => undefined);
      if (res?.suggestion !== undefined) offered++;
    }
  } finally {
    client.leave();
  }
  return offered;
}

/** A connect-es reader that takes two messages of its watch and leaves, on a new connection. */
async function readerRound(url: string, sessionId: string): Promise<void> {
  const client = ownConnection(url);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 2_000);
  let seen = 0;
  try {
    for await (const _m of client.suggestions.watchSuggestions(
      { sessionId },
      { signal: abort.signal },
    )) {
      if (++seen === 2) abort.abort();
    }
  } catch {
    // Aborted: the reader's own doing.
  } finally {
    clearTimeout(timer);
    client.leave();
  }
}

test("75 s of offers and churned watches with reconnects: open files flat, back to their count once clients leave", async () => {
  const pid = service.child.pid as number;
  const port = Number(new URL(service.url).port);
  const url = service.url;
  const setup = grpcClients(url);
  const chats = Array.from({ length: 3 }, () => uniqueId());
  for (const sessionId of chats) await putSession(setup, { sessionId });
  const chat = (i: number) => chats[i % chats.length] as string;

  // One short round of everything first, so that what opens on first use is counted.
  await Promise.all([
    agentRound(url),
    churnWatches(url, { count: 50, sessionId: chat(0) }),
    churnH1Watches(url, { count: 5, sessionId: chat(0) }),
    readerRound(url, chat(0)),
  ]);
  await eventually(async () => closeWaitOn(pid, port) === 0, 10_000);
  const before = openFilesOf(pid);

  const until = Date.now() + SOAK_MS;
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(openFilesOf(pid)), 1_000);
  let offered = 0;
  let goaways = 0;
  const rounds = await Promise.all([
    ...[0, 1, 2].map(() =>
      repeat(until, async () => {
        offered += await agentRound(url);
      }),
    ),
    ...[0, 1].map((w) =>
      repeat(until, async (i) => {
        const churn = await churnWatches(url, {
          count: 1_500,
          concurrency: 50,
          sessionId: chat(w + i),
        });
        goaways += churn.goaways;
      }),
    ),
    repeat(until, (i) => churnH1Watches(url, { count: 20, sessionId: chat(i) })),
    repeat(until, (i) => readerRound(url, chat(i))),
  ]);
  clearInterval(sampler);
  expect(offered).toBeGreaterThan(0);
  expect(goaways).toBeGreaterThan(0);
  expect(rounds.every((n) => n > 0)).toBe(true);

  // Flat while it ran: the connections of the clients at a time, never a growing pile.
  expect(Math.max(...samples)).toBeLessThan(before + 100);
  // The clients gone (the setup client's connection is counted in `before`).
  await eventually(async () => closeWaitOn(pid, port) === 0, 15_000).catch(() => {});
  expect(closeWaitOn(pid, port)).toBe(0);
  await eventually(async () => openFilesOf(pid) <= before + SLACK, 15_000).catch(() => {});
  expect(openFilesOf(pid)).toBeLessThanOrEqual(before + SLACK);
}, 180_000);
