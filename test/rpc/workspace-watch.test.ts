import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { WatchWorkspaceSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import {
  type Clients,
  grpcClients,
  putSession,
  type ServiceProcess,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { ids } from "../support/lists.js";
import { offerOne } from "../support/suggest.js";

/*
 * WatchWorkspaceSuggestions across instances: two service processes on one Redis (or
 * Redis Cluster); the watcher is on one, every change is made through the other.
 */

let one: ServiceProcess;
let two: ServiceProcess;
let writer: Clients;
let reader: Clients;
beforeAll(async () => {
  [one, two] = await Promise.all([spawnService(sharedRedisUrl()), spawnService(sharedRedisUrl())]);
  writer = grpcClients(one.url);
  reader = grpcClients(two.url);
}, 60_000);
afterAll(async () => {
  await Promise.all([one?.kill("SIGTERM"), two?.kill("SIGTERM")]);
});

/** A running WatchWorkspaceSuggestions whose messages are collected with their arrival time. */
function watchWorkspace(clients: Clients, workspaceId: string) {
  const abort = new AbortController();
  const messages: { at: number; m: WatchWorkspaceSuggestionsResponse }[] = [];
  const ended = (async () => {
    try {
      for await (const m of clients.suggestions.watchWorkspaceSuggestions(
        { workspaceId },
        { signal: abort.signal },
      )) {
        messages.push({ at: Date.now(), m });
      }
    } catch (err) {
      return err;
    }
    return undefined;
  })();
  /** The first message from `from` on whose ids are `expected`; rejects after `ms`. */
  const waitFor = async (expected: string[], from: number, ms = 5_000) => {
    const until = Date.now() + ms;
    for (;;) {
      const found = messages
        .slice(from)
        .find(({ m }) => ids(m.suggestions).join() === expected.join());
      if (found !== undefined) return found;
      if (Date.now() > until) {
        const seen = messages.map(({ m }) => ids(m.suggestions).join());
        throw new Error(
          `no message [${expected.join()}] in ${ms} ms; seen ${JSON.stringify(seen)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { messages, ended, waitFor, cancel: () => abort.abort() };
}

test("the first page at once, then every change in any chat of the workspace, from another instance within a second", async () => {
  const workspaceId = uniqueId("ws");
  const [a, b, elsewhere] = [uniqueId(), uniqueId(), uniqueId()];
  await putSession(writer, { sessionId: a, workspaceId });
  await putSession(writer, { sessionId: b, workspaceId });
  await putSession(writer, { sessionId: elsewhere, workspaceId: uniqueId("ws") });
  const first = (await offerOne(writer, a, "First")).id;

  const w = watchWorkspace(reader, workspaceId);
  await w.waitFor([first], 0);
  const listed = await reader.suggestions.listWorkspaceSuggestions({ workspaceId });
  expect(w.messages[0]?.m.suggestions).toEqual(listed.suggestions);

  /** Runs a change through the writer and waits for the watcher's next page. */
  const change = async (run: () => Promise<unknown>, expected: () => string[]) => {
    const from = w.messages.length;
    const began = Date.now();
    await run();
    const got = await w.waitFor(expected(), from);
    expect(got.at - began).toBeLessThan(1_000);
  };
  let second = "";
  let third = "";
  await change(
    async () => {
      second = (await offerOne(writer, b, "Second")).id;
    },
    () => [second, first],
  );
  await change(
    async () => {
      third = (await offerOne(writer, a, "Third")).id;
    },
    () => [third, second, first],
  );
  const req = (sessionId: string, suggestionId: string) => ({ sessionId, suggestionId });
  await change(
    () => writer.suggestions.dismissSuggestion(req(b, second)),
    () => [third, first],
  );
  await change(
    () => writer.suggestions.restoreSuggestion(req(b, second)),
    () => [third, second, first],
  );
  await change(
    () => writer.suggestions.draftSuggestion(req(a, first)),
    () => [third, second],
  );
  await change(
    () => writer.suggestions.startSuggestion(req(a, third)),
    () => [second],
  );
  // A chat of another workspace is not this watcher's change.
  const before = w.messages.length;
  await offerOne(writer, elsewhere, "Elsewhere");
  await new Promise((r) => setTimeout(r, 300));
  expect(w.messages.length).toBe(before);
  w.cancel();
  // The client's own cancel: connect reports it to the client as CANCELED.
  expect(await w.ended).toMatchObject({ code: Code.Canceled });
}, 30_000);
