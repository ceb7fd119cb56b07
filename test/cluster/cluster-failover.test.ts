import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { ListSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { sessionKeys, workspaceKeys } from "../../server/store/keys.js";
import { putSession, uniqueId } from "../support/harness.js";
import { ids, watch } from "../support/lists.js";
import {
  type ClusterNode,
  type LocalRedisCluster,
  startRedisCluster,
} from "../support/redis-cluster.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

// A 3-primary cluster of this file's own, whose nodes it kills with kill -9 and starts
// again (AOF on, appendfsync always), and a server on it with the embedded host.
let cluster: LocalRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster({ nodeTimeoutMs: 1_000 });
});
afterAll(async () => {
  await cluster?.stop();
});
const t = useTestServer({ redisUrl: () => cluster.url });

/** A new session whose keys live on `node` (its slot asked of the cluster). */
async function sessionOn(node: ClusterNode): Promise<string> {
  for (;;) {
    const sessionId = uniqueId();
    const slot = await cluster.keySlot(sessionKeys(sessionId).log);
    if ((await cluster.nodeOfSlot(slot)) === node) return sessionId;
  }
}

/**
 * A workspace whose inbox index lives on `node`: an offer or settlement in a chat of a
 * workspace announces the chat in its index first, so it needs that node too.
 */
async function workspaceOn(node: ClusterNode): Promise<string> {
  for (;;) {
    const workspaceId = uniqueId("ws");
    const slot = await cluster.keySlot(workspaceKeys(workspaceId).chats);
    if ((await cluster.nodeOfSlot(slot)) === node) return workspaceId;
  }
}

/** A session in a workspace with three offers: one dismissed, one started, one open. */
async function busySession(node: ClusterNode): Promise<ListSuggestionsResponse> {
  const sessionId = await sessionOn(node);
  await putSession(t.clients, { sessionId, workspaceId: await workspaceOn(node) });
  const [a, b] = [
    await offerOne(t.clients, sessionId, "A"),
    await offerOne(t.clients, sessionId, "B"),
  ];
  await offerOne(t.clients, sessionId, "C");
  await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: a.id });
  await t.clients.suggestions.startSuggestion({ sessionId, suggestionId: b.id });
  const lists = await t.clients.suggestions.listSuggestions({ sessionId });
  expect([lists.open.length, lists.settled.length]).toEqual([1, 2]);
  return lists;
}

const sessionOf = (lists: ListSuggestionsResponse) =>
  (lists.open[0] ?? lists.settled[0])?.sessionId as string;

/** Awaits a call that must fail; answers its code and how long it took. */
async function failure(call: () => Promise<unknown>): Promise<{ code: Code; ms: number }> {
  const started = Date.now();
  const err = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ConnectError)) throw new Error(`expected a failure, got ${String(err)}`);
  return { code: err.code, ms: Date.now() - started };
}

/** Retries `fn` until it succeeds or `ms` pass (a client finding a restarted node again). */
async function eventually<T>(fn: () => Promise<T>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

test("kill -9 of one primary: its sessions' calls fail UNAVAILABLE quickly, the others work on, and after a restart its lists are intact", async () => {
  const [victim, ...survivors] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
  const lost = await busySession(victim);
  const kept = await Promise.all(survivors.map(busySession));
  const lostId = sessionOf(lost);
  const [lostOpen] = ids(lost.open);

  await cluster.kill(victim);

  // Every kind of call on the lost session answers UNAVAILABLE within about a second.
  const calls: (() => Promise<unknown>)[] = [
    () => t.clients.suggestions.listSuggestions({ sessionId: lostId }),
    () => t.clients.suggestions.getSuggestion({ sessionId: lostId, suggestionId: lostOpen }),
    () => t.clients.suggestions.dismissSuggestion({ sessionId: lostId, suggestionId: lostOpen }),
    () => t.clients.suggestions.startSuggestion({ sessionId: lostId, suggestionId: lostOpen }),
    () =>
      t.clients.suggestions.suggestTask({
        context: { sessionId: lostId, turnId: "t-x", role: AgentRole.TOP_LEVEL, toolCallId: "" },
        args: { title: "X", tldr: "x", brief: "x" },
      }),
    () => t.clients.local.getChat({ chatId: lostId }),
    async () => {
      for await (const _ of t.clients.suggestions.watchSuggestions({ sessionId: lostId })) {
        // The first lists cannot be read: the watch fails before it sends any.
      }
    },
  ];
  const failures = await Promise.all(calls.map(failure));
  for (const f of failures) {
    expect(Code[f.code]).toBe("Unavailable");
    expect(f.ms).toBeLessThan(3_000);
  }

  // The instance stays healthy: it serves every session the live primaries hold.
  const health = createClient(Health, t.clients.transport);
  for (let i = 0; i < 6; i++) {
    expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
  }

  // Sessions on the live primaries answer as before and take new offers and settlements.
  for (const lists of kept) {
    const sessionId = sessionOf(lists);
    const started = Date.now();
    expect(await t.clients.suggestions.listSuggestions({ sessionId })).toEqual(lists);
    expect(Date.now() - started).toBeLessThan(1_000);
    const [open] = ids(lists.open);
    await t.clients.suggestions.draftSuggestion({ sessionId, suggestionId: open as string });
    const offered = await offerOne(t.clients, sessionId, "D");
    const now = await t.clients.suggestions.listSuggestions({ sessionId });
    expect(ids(now.open)).toEqual([offered.id]);
    expect(now.settled.length).toBe(3);
  }

  // Back from its AOF: the same lists, and the session takes calls again.
  await cluster.restart(victim);
  await cluster.waitHealthy();
  const after = await eventually(() =>
    t.clients.suggestions.listSuggestions({ sessionId: lostId }),
  );
  expect(after).toEqual(lost);
  await t.clients.suggestions.dismissSuggestion({ sessionId: lostId, suggestionId: lostOpen });
  const settledNow = await t.clients.suggestions.listSuggestions({ sessionId: lostId });
  expect(ids(settledNow.open)).toEqual([]);
}, 60_000);

test("an instance subscribes on the primaries of its watched sessions only, one connection each; another node's loss goes unnoticed", async () => {
  const [a, b, other] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
  const watched = [await sessionOn(a), await sessionOn(a), await sessionOn(b)];
  const watches = [];
  for (const sessionId of watched) {
    await putSession(t.clients, { sessionId });
    const w = watch(t.clients, sessionId);
    await w.waitFor(() => true);
    watches.push(w);
  }
  // Shard channels stay on the primary of their slot: two there, one here, none there.
  expect(await subscriptionsOn(a)).toEqual([2]);
  expect(await subscriptionsOn(b)).toEqual([1]);
  expect(await subscriptionsOn(other)).toEqual([]);

  await cluster.kill(other);
  const offered = await offerOne(t.clients, watched[2] as string, "After another's loss");
  await watches[2]?.waitFor((m) => ids(m.open).join(",") === offered.id, 0, 5_000);

  for (const w of watches) w.cancel();
  await Promise.all(watches.map((w) => w.ended));
  await cluster.restart(other);
  await cluster.waitHealthy();
}, 60_000);

test("with every primary down, calls fail UNAVAILABLE at once instead of waiting; all come back after", async () => {
  const sessionId = await sessionOn(cluster.nodes[1] as ClusterNode);
  await putSession(t.clients, { sessionId });
  const offered = await offerOne(t.clients, sessionId);
  await Promise.all(cluster.nodes.map((n) => cluster.kill(n)));
  const health = createClient(Health, t.clients.transport);
  expect((await health.check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);
  for (let i = 0; i < 3; i++) {
    const f = await failure(() => t.clients.suggestions.listSuggestions({ sessionId }));
    expect(Code[f.code]).toBe("Unavailable");
    expect(f.ms).toBeLessThan(3_000);
  }
  await Promise.all(cluster.nodes.map((n) => cluster.restart(n)));
  await cluster.waitHealthy();
  const lists = await eventually(() => t.clients.suggestions.listSuggestions({ sessionId }));
  expect(ids(lists.open)).toEqual([offered.id]);
}, 60_000);

/** The channels held by each subscriber connection of the service on `node`. */
async function subscriptionsOn(node: ClusterNode): Promise<number[]> {
  const r = new Redis(node.port, "127.0.0.1", { maxRetriesPerRequest: 0 });
  try {
    const list = (await r.client("LIST")) as string;
    return list
      .split("\n")
      .filter((line) => /name=\S*suggest-task-subscriber /.test(line))
      .map((line) => Number(/\bssub=(\d+)/.exec(line)?.[1]));
  } finally {
    r.disconnect();
  }
}
