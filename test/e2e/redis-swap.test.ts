import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { Redis } from "ioredis";
import { expect, onTestFailed, onTestFinished, test } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as Serving,
} from "../../gen/grpc/health/v1/health_pb.js";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  type Clients,
  eventually,
  grpcClients,
  ownRedis,
  putSession,
  type ServiceProcess,
  spawnService,
  tempDir,
  uniqueId,
} from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";
import { offer } from "../support/suggest.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

// The Redis behind an unchanged `redis://` address is replaced or restarted while agents
// offer and people watch: the same service process serves again within 2 s of a Redis
// that answers, every watch stream sees the next change, and no acknowledged offer is
// lost. The address is a TCP proxy of the test's own; when its primary dies it holds
// every connection open and silent for longer than a Redis command's 5 s timeout (a
// managed endpoint moving to the promoted replica), then forwards to the replica.

/** Messages of one server stream, as they come. */
interface Capture<T> {
  readonly messages: T[];
  /** Undefined while it runs; what ended it (an error, or "done"). */
  ended(): unknown;
  /** Resolves once a message after the first `from` passes `test`. */
  seen(test: (m: T) => boolean, from: number, timeoutMs: number): Promise<void>;
}

function capture<T>(open: (signal: AbortSignal) => AsyncIterable<T>): Capture<T> {
  const abort = new AbortController();
  onTestFinished(() => abort.abort());
  const messages: T[] = [];
  let end: unknown;
  void (async () => {
    try {
      for await (const m of open(abort.signal)) messages.push(m);
      end = "done";
    } catch (err) {
      end = err;
    }
  })();
  return {
    messages,
    ended: () => end,
    async seen(test, from, timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (!messages.slice(from).some(test)) {
        if (end !== undefined) throw new Error(`the stream ended: ${String(end)}`);
        if (Date.now() > until) throw new Error(`not seen in ${timeoutMs} ms`);
        await sleep(20);
      }
    },
  };
}

/** What the test watches: sessions and their workspace. */
interface Watched {
  readonly workspaceId: string;
  readonly sessions: { sessionId: string; watch: Capture<{ open: Suggestion[] }> }[];
  readonly workspace: Capture<{ suggestions: Suggestion[] }>[];
}

async function openWatches(clients: Clients, workspaceId: string): Promise<Watched> {
  const sessions = [];
  for (let i = 0; i < 6; i++) {
    const sessionId = uniqueId("watched");
    await putSession(clients, { sessionId, workspaceId });
    const watch = capture((signal) =>
      clients.suggestions.watchSuggestions({ sessionId }, { signal }),
    );
    sessions.push({ sessionId, watch });
  }
  const workspace = [0, 1].map(() =>
    capture((signal) => clients.suggestions.watchWorkspaceSuggestions({ workspaceId }, { signal })),
  );
  for (const { watch } of sessions) await watch.seen(() => true, 0, 10_000);
  for (const watch of workspace) await watch.seen(() => true, 0, 10_000);
  return { workspaceId, sessions, workspace };
}

/** Agents offering in new chats of the workspace until stopped; the offers acknowledged. */
function agentLoad(clients: Clients, workspaceId: string, agents: number) {
  const acknowledged: { sessionId: string; id: string }[] = [];
  let stopped = false;
  const agent = async () => {
    while (!stopped) {
      const sessionId = uniqueId("agent");
      try {
        await putSession(clients, { sessionId, workspaceId });
        for (let i = 0; i < 3 && !stopped; i++) {
          const res = await offer(clients, { sessionId });
          if (res.suggestion !== undefined) acknowledged.push({ sessionId, id: res.suggestion.id });
        }
      } catch {
        // Not acknowledged: nothing is owed. A pause, as an agent's retry would wait.
        await sleep(50);
      }
    }
  };
  const running = Promise.all(Array.from({ length: agents }, agent));
  return {
    acknowledged,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** Milliseconds from now until the service answers a read. */
async function untilServed(clients: Clients, sessionId: string): Promise<number> {
  const began = Date.now();
  for (;;) {
    const ok = await clients.suggestions.listSuggestions({ sessionId }, { timeoutMs: 1_000 }).then(
      () => true,
      () => false,
    );
    if (ok) return Date.now() - began;
    if (Date.now() - began > 30_000) throw new Error("never served again");
    await sleep(20);
  }
}

/** A call retried until it succeeds: a write may fail while a replica catches up. */
async function retried<T>(call: () => Promise<T>): Promise<T> {
  const until = Date.now() + 15_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(100);
    }
  }
}

/**
 * After the swap: the load stopped, something was acknowledged, nothing missed, and the
 * service is the same process, never exited.
 */
async function expectSameProcessMissedNothing(
  service: ServiceProcess,
  pid: number | undefined,
  load: ReturnType<typeof agentLoad>,
  clients: Clients,
  watched: Watched,
): Promise<void> {
  await sleep(500);
  await load.stop();
  expect(load.acknowledged.length).toBeGreaterThan(0);
  await expectNothingMissed(clients, watched, load.acknowledged);
  expect([service.child.pid, service.child.exitCode, service.child.signalCode]).toEqual([
    pid,
    null,
    null,
  ]);
}

/**
 * After the swap: a new offer in each watched chat and in a new chat of the workspace,
 * seen by every watch; every acknowledged offer is listed.
 */
async function expectNothingMissed(
  clients: Clients,
  watched: Watched,
  acknowledged: readonly { sessionId: string; id: string }[],
): Promise<void> {
  const marks = watched.sessions.map((s) => s.watch.messages.length);
  const workspaceMarks = watched.workspace.map((w) => w.messages.length);
  const offered: string[] = [];
  for (const { sessionId } of watched.sessions) {
    const res = await retried(() => offer(clients, { sessionId, title: "After the swap" }));
    offered.push(res.suggestion?.id ?? "");
  }
  const sessionId = uniqueId("after");
  await retried(() => putSession(clients, { sessionId, workspaceId: watched.workspaceId }));
  const last = await retried(() => offer(clients, { sessionId, title: "Last one" }));
  const lastId = last.suggestion?.id ?? "";
  await Promise.all([
    ...watched.sessions.map(({ watch }, i) =>
      watch.seen((m) => m.open.some((s) => s.id === offered[i]), marks[i] ?? 0, 10_000),
    ),
    ...watched.workspace.map((watch, i) =>
      watch.seen((m) => m.suggestions.some((s) => s.id === lastId), workspaceMarks[i] ?? 0, 10_000),
    ),
  ]);
  const missing: string[] = [];
  for (const { sessionId: chat, id } of acknowledged) {
    const lists = await retried(() => clients.suggestions.listSuggestions({ sessionId: chat }));
    if (![...lists.open, ...lists.settled].some((s) => s.id === id)) missing.push(id);
  }
  expect(missing).toEqual([]);
}

/** `GET /readyz`: its status and body. */
async function readyz(url: string): Promise<[number, string]> {
  const res = await fetch(`${url}/readyz`);
  return [res.status, await res.text()];
}

async function replicaOnline(primaryPort: number): Promise<void> {
  const client = new Redis({ port: primaryPort, lazyConnect: true });
  client.on("error", () => {});
  try {
    await client.connect();
    const until = Date.now() + 20_000;
    while (!/^slave\d+:.*state=online/m.test(await client.info("replication"))) {
      if (Date.now() > until) throw new Error("the replica never came online");
      await sleep(50);
    }
  } finally {
    client.disconnect();
  }
}

test("the primary behind the address dies, connections hang 6.5 s, the promoted replica takes the address: served again within 2 s, nothing missed", async () => {
  // The primary, its replica, and the replica's own replica, which stays the promoted
  // one's replica: writes are confirmed (REDIS_WAIT_REPLICAS=1) before and after.
  const primary = await ownRedis();
  const replicaDir = tempDir("replica");
  const secondDir = tempDir("second");
  const replica = await startTestRedis({
    dir: replicaDir.dir,
    extraArgs: ["--replicaof", "127.0.0.1", String(primary.port)],
  });
  const second = await startTestRedis({
    dir: secondDir.dir,
    extraArgs: ["--replicaof", "127.0.0.1", String(replica.port)],
  });
  let proxy: TcpProxy | undefined;
  onTestFinished(async () => {
    await proxy?.close();
    for (const r of [primary, replica, second]) await r.kill().catch(() => {});
    for (const d of [primary, replicaDir, secondDir]) d.remove();
  });
  await replicaOnline(replica.port);
  await replicaOnline(primary.port);
  proxy = await startTcpProxy(primary);
  const service = await spawnService(proxy.url, { REDIS_WAIT_REPLICAS: "1" });
  onTestFinished(() => service.kill().then(() => {}));
  onTestFailed(() =>
    console.info(
      service
        .output()
        .split("\n")
        .filter((line) => !line.includes('"level":30') || /ListSuggestions|Redis/.test(line))
        .join("\n")
        .slice(-12_000),
    ),
  );
  const pid = service.child.pid;
  const clients = grpcClients(service.url);
  const watched = await openWatches(clients, uniqueId("ws"));
  const load = agentLoad(clients, watched.workspaceId, 3);
  await sleep(1_000);

  proxy.hold();
  await primary.kill();
  await sleep(3_000);
  // No Redis answers: not ready, on both probes, though every connection is still open.
  expect(await readyz(service.url)).toEqual([503, "not ready: Redis does not answer\n"]);
  const health = createClient(Health, clients.transport);
  expect((await health.check({ service: "" })).status).toBe(Serving.NOT_SERVING);
  await sleep(3_500);
  const promoted = new Redis({ port: replica.port });
  promoted.on("error", () => {});
  await promoted.replicaof("NO", "ONE");
  promoted.disconnect();
  proxy.forward(replica);
  const servedMs = await untilServed(clients, watched.sessions[0]?.sessionId ?? "");
  // Ready again as soon as the answer watch hears the new primary.
  await eventually(async () => (await readyz(service.url))[0] === 200, 2_000);
  expect((await health.check({ service: "" })).status).toBe(Serving.SERVING);
  await expectSameProcessMissedNothing(service, pid, load, clients, watched);
  expect(service.output()).not.toMatch(/unhandled|uncaught/i);
  console.info(`served again ${servedMs} ms after the switch`);
  expect(servedMs).toBeLessThan(2_000);
}, 120_000);

test("the one Redis behind the address restarts (AOF, same data folder): served again within 2 s, nothing missed", async () => {
  const first = await ownRedis();
  let redis = first;
  let proxy: TcpProxy | undefined;
  onTestFinished(async () => {
    await proxy?.close();
    await redis.kill().catch(() => {});
    first.remove();
  });
  proxy = await startTcpProxy(first);
  const service = await spawnService(proxy.url);
  onTestFinished(() => service.kill().then(() => {}));
  onTestFailed(() => console.info(service.output().slice(-6_000)));
  const pid = service.child.pid;
  const clients = grpcClients(service.url);
  const watched = await openWatches(clients, uniqueId("ws"));
  const load = agentLoad(clients, watched.workspaceId, 3);
  await sleep(1_000);

  await first.kill();
  await sleep(3_000);
  redis = Object.assign(await startTestRedis({ dir: first.dir, port: first.port }), {
    remove: first.remove,
  });
  const servedMs = await untilServed(clients, watched.sessions[0]?.sessionId ?? "");
  await expectSameProcessMissedNothing(service, pid, load, clients, watched);
  console.info(`served again ${servedMs} ms after the restart`);
  expect(servedMs).toBeLessThan(2_000);
}, 120_000);
