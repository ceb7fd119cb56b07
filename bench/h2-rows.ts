/**
 * Rows of the read and settle RPCs alone, beside `npm run bench`: server CPU per call
 * against the grpc-js noop, in one run, with h2load (Debian `nghttp2-client`) where one
 * body serves and a lean loop of framed calls (bench/h2-frames.ts) where each call needs
 * its own. `BENCH_ROOTS` (comma-separated checkouts of this repository, default `.`)
 * serves each one's compiled server (`builtService`) in turn, so a before/after
 * comparison is one run.
 *
 *   node --import tsx bench/h2-rows.ts
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FolderKind } from "../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../gen/oda/suggest/v1/suggestion_pb.js";
import {
  DismissSuggestionRequestSchema,
  GetSuggestionRequestSchema,
  ListSuggestionsRequestSchema,
  RestoreSuggestionRequestSchema,
  StartSuggestionRequestSchema,
  SuggestTaskRequestSchema,
  WatchSuggestionsRequestSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { EmbeddedChatHost } from "../server/host/embedded-host.js";
import { freePort } from "../server/redis/redis-server-process.js";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { startTestRedis } from "../test/support/store-server.js";
import { measureStartConcurrency } from "./extras.js";
import { requestFrame } from "./grpc-frames.js";
import { h2load, h2loadBurst, once, sequences } from "./h2-runners.js";
import { watchCost } from "./h2-watch.js";
import { builtService, startNode } from "./measure.js";

const SVC = "/oda.suggest.v1.SuggestionService";

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "h2rows-redis-"));
  const redis = await startTestRedis({ dir });
  const client = createRedisClient(redis.url);
  const host = new EmbeddedChatHost(client);
  const store = new SuggestionStore(client);
  // 64 chats of 3 open + 7 settled: one per loop of the settle sequences.
  const chats: { sessionId: string; open: string[]; dismissed: string[] }[] = [];
  for (let c = 0; c < 64; c++) {
    const sessionId = `bench-${c}`;
    await host.putSession({
      sessionId,
      workspaceId: "ws",
      folder: FolderKind.NORMAL,
      settings: { model: "m" },
    });
    const chat = { sessionId, open: [] as string[], dismissed: [] as string[] };
    for (let i = 0; i < 10; i++) {
      const o = await store.offer(
        sessionId,
        {
          id: randomUUID(),
          turnId: `t${i}`,
          toolCallId: "",
          title: "Bench offer",
          tldr: "Worth it",
          brief: "Do it.",
        },
        false,
      );
      if (o.kind !== "recorded") throw new Error(o.kind);
      if (i < 7) {
        const outcome = i % 2 === 0 ? "dismissed" : "drafted";
        await store.settle(sessionId, o.suggestion.id, outcome);
        if (outcome === "dismissed") chat.dismissed.push(o.suggestion.id);
      } else chat.open.push(o.suggestion.id);
    }
    chats.push(chat);
  }
  const c0 = chats[0] as (typeof chats)[number];
  const roots = (process.env.BENCH_ROOTS ?? ".").split(",");
  // Per root (by its place in the list, so a root named twice gets ids of its own each
  // time): fresh sessions for SuggestTask, and open offers (3 per chat) to start.
  const START_CALLS = Number(process.env.BENCH_START_CALLS ?? 3_000);
  const fresh: string[][] = [];
  const toStart: [string, string][][] = [];
  const concurrent: [string, string][][] = [];
  for (const r of roots.keys()) {
    const put = async (sessionId: string) =>
      host.putSession({
        sessionId,
        workspaceId: "ws",
        folder: FolderKind.NORMAL,
        settings: { model: "m" },
      });
    const freshIds = Array.from({ length: START_CALLS * 2 }, (_, i) => `fresh-${r}-${i}`);
    for (let i = 0; i < freshIds.length; i += 500)
      await Promise.all(freshIds.slice(i, i + 500).map(put));
    fresh[r] = freshIds;
    const pairs: [string, string][] = [];
    const more: [string, string][] = [];
    for (let i = 0; i < START_CALLS / 3 + 40; i++) {
      const sessionId = `start-${r}-${i}`;
      await put(sessionId);
      for (let t = 0; t < 3; t++) {
        const o = await store.offer(
          sessionId,
          {
            id: randomUUID(),
            turnId: `t${t}`,
            toolCallId: "",
            title: "Bench offer",
            tldr: "Worth it",
            brief: "Do it.",
          },
          false,
        );
        if (o.kind === "recorded")
          (i < 40 && t === 0 ? more : pairs).push([sessionId, o.suggestion.id]);
      }
    }
    toStart[r] = pairs;
    concurrent[r] = more;
  }
  const slots = <T>(items: T[]) => {
    const lists: T[][] = Array.from({ length: 64 }, () => []);
    for (const [i, item] of items.entries()) lists[i % 64]?.push(item);
    return lists;
  };
  const rows: [string, number][] = [];
  const noopPort = await freePort();
  const noop = await startNode(["bench/noop-server.ts", "grpc-js", String(noopPort)], {}, /ready/);
  const noopRow = await h2load(
    noopPort,
    "/grpc.health.v1.Health/Check",
    requestFrame(ListSuggestionsRequestSchema, {}),
    noop.pid,
  );
  await noop.stop();
  rows.push(["grpc-js noop", noopRow.cpuUs]);
  const extras: string[] = [];
  for (const [r, root] of roots.entries()) {
    const port = await freePort();
    const server = await startNode(
      [builtService(root)],
      { PORT: String(port), REDIS_URL: redis.url, LOG_LEVEL: "info" },
      /listening on/,
    );
    const tag = root === "." ? "" : ` [${root}]`;
    const get = await h2load(
      port,
      `${SVC}/GetSuggestion`,
      requestFrame(GetSuggestionRequestSchema, {
        sessionId: c0.sessionId,
        suggestionId: c0.open[0] as string,
      }),
      server.pid,
    );
    rows.push([`GetSuggestion${tag}`, get.cpuUs]);
    const list = await h2load(
      port,
      `${SVC}/ListSuggestions`,
      requestFrame(ListSuggestionsRequestSchema, { sessionId: c0.sessionId }),
      server.pid,
    );
    rows.push([`ListSuggestions unchanged${tag}`, list.cpuUs]);
    const settleSteps = (slot: number): [string, Buffer][] => {
      const chat = chats[slot] as (typeof chats)[number];
      const ids = { sessionId: chat.sessionId, suggestionId: chat.open[0] as string };
      return [
        [`${SVC}/DismissSuggestion`, requestFrame(DismissSuggestionRequestSchema, ids)],
        [`${SVC}/RestoreSuggestion`, requestFrame(RestoreSuggestionRequestSchema, ids)],
      ];
    };
    const settle = await sequences(port, settleSteps, server.pid);
    rows.push([`Dismiss/Restore${tag}`, settle.cpuUs]);
    const withList = await sequences(
      port,
      (slot) => {
        const [d, r] = settleSteps(slot) as [[string, Buffer], [string, Buffer]];
        const l: [string, Buffer] = [
          `${SVC}/ListSuggestions`,
          requestFrame(ListSuggestionsRequestSchema, {
            sessionId: (chats[slot] as (typeof chats)[number]).sessionId,
          }),
        ];
        return [d, l, r, l];
      },
      server.pid,
    );
    // (settle + list) pairs minus the settle alone: the List right after a change.
    rows.push([`ListSuggestions after a change${tag}`, 2 * withList.cpuUs - settle.cpuUs]);
    const offers = slots(fresh[r] ?? []).map((ids) =>
      ids.map((sessionId, i): [string, Buffer] => [
        `${SVC}/SuggestTask`,
        requestFrame(SuggestTaskRequestSchema, {
          context: { sessionId, turnId: `t${i}`, role: AgentRole.TOP_LEVEL, toolCallId: "" },
          args: { title: "Bench offer", tldr: "Worth it", brief: "Do it." },
        }),
      ]),
    );
    const suggest = await once(port, offers, server.pid);
    rows.push([`SuggestTask, fresh session${tag}`, suggest.cpuUs]);
    const starts = slots(toStart[r] ?? []).map((pairs) =>
      pairs.map(([sessionId, suggestionId]): [string, Buffer] => [
        `${SVC}/StartSuggestion`,
        requestFrame(StartSuggestionRequestSchema, { sessionId, suggestionId }),
      ]),
    );
    const start = await once(port, starts, server.pid);
    rows.push([`StartSuggestion, embedded host${tag}`, start.cpuUs]);
    // 1,000 watchers of one chat (a chat of its own per root), changed by dismiss/restore.
    const watched = chats[63 - r] as (typeof chats)[number];
    const ids = { sessionId: watched.sessionId, suggestionId: watched.open[1] as string };
    const watch = await watchCost(
      port,
      server.pid,
      requestFrame(WatchSuggestionsRequestSchema, { sessionId: watched.sessionId }),
      async (i) => {
        if (i % 2 === 0) await store.settle(ids.sessionId, ids.suggestionId, "dismissed");
        else await store.settle(ids.sessionId, ids.suggestionId, "restored");
      },
    );
    rows.push([
      `Watch, µs per delivered message (${watch.watchers} watchers)${tag}`,
      watch.usPerDelivery,
    ]);
    // The same with h2load (a C client, so the client is not what is timed): medians.
    const pairs = concurrent[r] ?? [];
    const burst = async (pair: [string, string], n: number) =>
      h2loadBurst(
        port,
        `${SVC}/StartSuggestion`,
        requestFrame(StartSuggestionRequestSchema, { sessionId: pair[0], suggestionId: pair[1] }),
        n,
      );
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const ones: number[] = [];
    const fifties: number[] = [];
    for (const pair of pairs.slice(0, 10)) ones.push(await burst(pair, 1));
    for (const pair of pairs.slice(10, 20)) fifties.push(await burst(pair, 50));
    extras.push(
      `50 concurrent Starts, h2load${tag}: one ${median(ones).toFixed(2)} ms, fifty ${median(fifties).toFixed(2)} ms, ratio ${(median(fifties) / median(ones)).toFixed(2)}`,
    );
    const fifty = await measureStartConcurrency(
      `127.0.0.1:${port}`,
      { server: server.pid, redis: redis.pid },
      pairs.slice(20),
    );
    extras.push(`50 concurrent Starts${tag}: ${JSON.stringify(fifty)}`);
    await server.stop();
  }
  await client.quit();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
  for (const [name, us] of rows) {
    console.log(`| ${name} | ${us.toFixed(0)} | ${(us / noopRow.cpuUs).toFixed(2)} |`);
  }
  for (const line of extras) console.log(line);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
