import { afterEach, expect, test } from "vitest";
import { grpcClients, ownRedis, putSession, spawnService, uniqueId } from "../support/harness.js";
import { NOTE, SettlementReader } from "../support/settlements.js";
import { startTestRedis } from "../support/store-server.js";
import { offerOne } from "../support/suggest.js";
import { withdraw } from "../support/withdraw.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Dismisses and restores each offer over and over through `clients`; failures end it. */
async function churn(clients: ReturnType<typeof grpcClients>, sessionId: string, ids: string[]) {
  for (let round = 0; round < 40; round++) {
    for (const suggestionId of ids) {
      const rpc = round % 2 === 0 ? "dismissSuggestion" : "restoreSuggestion";
      try {
        await clients.suggestions[rpc]({ sessionId, suggestionId });
      } catch {
        return;
      }
    }
  }
}

test("notes asked with each cursor miss and repeat nothing across two service processes, kill -9 of one and of Redis", async () => {
  const redisServer = await ownRedis();
  cleanups.push(redisServer.remove);
  const [a, b] = await Promise.all([spawnService(redisServer.url), spawnService(redisServer.url)]);
  cleanups.push(
    () => a.kill(),
    () => b.kill(),
  );
  const [clientsA, clientsB] = [grpcClients(a.url), grpcClients(b.url)];
  const sessionId = uniqueId();
  await putSession(clientsA, { sessionId });
  const ids: string[] = [];
  for (const title of ["One", "Two", "Three"])
    ids.push((await offerOne(clientsA, sessionId, title)).id);

  // A reader polls both processes while both settle the same offers.
  const reader = new SettlementReader(sessionId);
  const notes: string[] = [];
  let polling = true;
  const polls = (async () => {
    for (let i = 0; polling; i++) {
      try {
        notes.push(...(await reader.poll(i % 2 === 0 ? clientsA : clientsB)));
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  })();
  const writers = [churn(clientsA, sessionId, ids), churn(clientsB, sessionId, ids)];
  await new Promise((resolve) => setTimeout(resolve, 300));
  // Both a service process and Redis die in the middle of it.
  await Promise.all([a.kill("SIGKILL"), redisServer.kill()]);
  await Promise.all(writers);
  polling = false;
  await polls;
  const heardBefore = reader.heard.length;
  expect(heardBefore).toBeGreaterThan(0);

  const restarted = await startTestRedis({ dir: redisServer.dir, port: redisServer.port });
  cleanups.push(() => restarted.stop());
  const c = await spawnService(restarted.url);
  cleanups.push(() => c.kill("SIGTERM"));
  const clientsC = grpcClients(c.url);
  // After the restart: one more settlement of each kind the agent hears of.
  const lists = await clientsC.suggestions.listSuggestions({ sessionId });
  for (const s of lists.settled) {
    await clientsC.suggestions
      .restoreSuggestion({ sessionId, suggestionId: s.id })
      .catch(() => undefined);
  }
  const open = (await clientsC.suggestions.listSuggestions({ sessionId })).open;
  const title = open[0]?.title as string;
  await withdraw(clientsC, { sessionId, title });
  notes.push(...(await reader.poll(clientsC)));
  notes.push(...(await reader.poll(grpcClients(b.url))));

  const all = await clientsC.suggestions.listSettlements({ sessionId, after: "" });
  expect(all.settlements.length).toBeGreaterThan(heardBefore);
  expect(reader.heard).toEqual(all.settlements);
  expect(new Set(reader.heard.map((s) => s.cursor)).size).toBe(reader.heard.length);
  expect(notes.at(-1)).toBe(NOTE.withdrawn(title));
  expect(notes).toHaveLength(all.settlements.length);
});

test("a retried withdraw_suggestion call answers the first result after kill -9 of the service and of Redis", async () => {
  const redisServer = await ownRedis();
  cleanups.push(redisServer.remove);
  const first = await spawnService(redisServer.url);
  const firstClients = grpcClients(first.url);
  const sessionId = uniqueId();
  await putSession(firstClients, { sessionId });
  await offerOne(firstClients, sessionId, "Stale");
  const call = { sessionId, title: "Stale", turnId: "t9", toolCallId: "toolu_w" };
  const answer = await withdraw(firstClients, call);
  await Promise.all([first.kill("SIGKILL"), redisServer.kill()]);

  const restarted = await startTestRedis({ dir: redisServer.dir, port: redisServer.port });
  cleanups.push(() => restarted.stop());
  const second = await spawnService(restarted.url);
  cleanups.push(() => second.kill("SIGTERM"));
  const secondClients = grpcClients(second.url);
  expect(await withdraw(secondClients, call)).toEqual(answer);
  const { settlements } = await secondClients.suggestions.listSettlements({ sessionId, after: "" });
  expect(settlements.map((s) => s.cursor)).toHaveLength(1);
});
