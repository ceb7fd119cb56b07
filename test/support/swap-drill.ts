import { setTimeout as sleep } from "node:timers/promises";
import { type Code, ConnectError } from "@connectrpc/connect";
import { expect, onTestFinished } from "vitest";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { type Clients, putSession, type ServiceProcess, uniqueId } from "./harness.js";
import { offer } from "./suggest.js";

/*
 * The drills in which Redis goes away under load and another takes its place (a swap
 * behind one address, a Sentinel failover): agents offer, people watch, and afterwards
 * nothing acknowledged is missing and every watch saw the next change.
 */

/** Messages of one server stream, as they come. */
export interface Capture<T> {
  readonly messages: T[];
  /** Undefined while it runs; what ended it (an error, or "done"). */
  ended(): unknown;
  /** Resolves once a message after the first `from` passes `test`. */
  seen(test: (m: T) => boolean, from: number, timeoutMs: number): Promise<void>;
}

export function capture<T>(open: (signal: AbortSignal) => AsyncIterable<T>): Capture<T> {
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
export interface Watched {
  readonly workspaceId: string;
  readonly sessions: { sessionId: string; watch: Capture<{ open: Suggestion[] }> }[];
  readonly workspace: Capture<{ suggestions: Suggestion[] }>[];
}

export async function openWatches(clients: Clients, workspaceId: string): Promise<Watched> {
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
export function agentLoad(clients: Clients, workspaceId: string, agents: number) {
  const acknowledged: { sessionId: string; id: string; at: number }[] = [];
  /** The code of each failed call. */
  const failures: Code[] = [];
  let stopped = false;
  const agent = async () => {
    while (!stopped) {
      const sessionId = uniqueId("agent");
      try {
        await putSession(clients, { sessionId, workspaceId });
        for (let i = 0; i < 3 && !stopped; i++) {
          const res = await offer(clients, { sessionId });
          if (res.suggestion !== undefined)
            acknowledged.push({ sessionId, id: res.suggestion.id, at: Date.now() });
        }
      } catch (err) {
        // Not acknowledged: nothing is owed. A pause, as an agent's retry would wait.
        failures.push(ConnectError.from(err).code);
        await sleep(50);
      }
    }
  };
  const running = Promise.all(Array.from({ length: agents }, agent));
  return {
    acknowledged,
    failures,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** Milliseconds from now until the service answers a read. */
export async function untilServed(clients: Clients, sessionId: string): Promise<number> {
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
export async function retried<T>(call: () => Promise<T>): Promise<T> {
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
export async function expectSameProcessMissedNothing(
  service: ServiceProcess,
  pid: number | undefined,
  load: ReturnType<typeof agentLoad>,
  clients: Clients,
  watched: Watched,
  /** Which acknowledged offers must be kept; all by default. */
  owed: (offer: { at: number }) => boolean = () => true,
): Promise<void> {
  await sleep(500);
  await load.stop();
  expect(load.acknowledged.length).toBeGreaterThan(0);
  await expectNothingMissed(clients, watched, load.acknowledged.filter(owed));
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
export async function expectNothingMissed(
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
export async function readyz(url: string): Promise<[number, string]> {
  const res = await fetch(`${url}/readyz`);
  return [res.status, await res.text()];
}
