/**
 * Ad-hoc rows for issue 16, until the h2load-driven `npm run bench` lands: server CPU per
 * call of the read and settle RPCs against the grpc-js noop, in one run, with h2load
 * (Debian `nghttp2-client`) where one body serves and a lean node:http2 loop where each
 * call needs its own. `BENCH_ROOTS` (comma-separated checkouts of this repository,
 * default `.`) serves each one's `server/main.ts` in turn, so a before/after comparison
 * is one run.
 *
 *   node --import tsx bench/h2-rows.ts
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { FolderKind } from "../gen/oda/suggest/v1/chat_host_pb.js";
import {
  DismissSuggestionRequestSchema,
  GetSuggestionRequestSchema,
  ListSuggestionsRequestSchema,
  RestoreSuggestionRequestSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { EmbeddedChatHost } from "../server/host/embedded-host.js";
import { freePort, startRedisServer } from "../server/redis/redis-server-process.js";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { cpuSeconds, startNode } from "./measure.js";

const run = promisify(execFile);
const WARMUP_S = 2;
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 6);
const SVC = "/oda.suggest.v1.SuggestionService";

function frame<S extends DescMessage>(schema: S, init: MessageInitShape<S>): Buffer {
  const bytes = toBinary(schema, create(schema, init));
  const out = Buffer.alloc(5 + bytes.length);
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/** One h2load run: calls/s and server CPU µs per call over the window. */
async function h2load(port: number, path: string, body: Buffer, pid: number) {
  const dir = mkdtempSync(join(tmpdir(), "h2rows-"));
  const file = join(dir, "body");
  writeFileSync(file, body);
  let before = 0;
  const timer = setTimeout(() => {
    before = cpuSeconds(pid);
  }, WARMUP_S * 1000);
  const { stdout } = await run("h2load", [
    ...["-c", "4", "-m", "16", "--warm-up-time", String(WARMUP_S), "-D", String(WINDOW_S)],
    ...["-d", file, "-H", "content-type: application/grpc", "-H", "te: trailers"],
    `http://127.0.0.1:${port}${path}`,
  ]);
  const after = cpuSeconds(pid);
  clearTimeout(timer);
  rmSync(dir, { recursive: true, force: true });
  const done = Number(/(\d+) succeeded/.exec(stdout)?.[1] ?? 0);
  return { callsPerSecond: done / WINDOW_S, cpuUs: ((after - before) / done) * 1e6 };
}

/** 64 loops, each running its own sequence of calls in order, for the window. */
async function sequences(port: number, steps: (slot: number) => [string, Buffer][], pid: number) {
  const sessions = Array.from({ length: 4 }, () => http2.connect(`http://127.0.0.1:${port}`));
  const call = (s: http2.ClientHttp2Session, path: string, body: Buffer) =>
    new Promise<void>((ok, fail) => {
      const req = s.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
      });
      req.on("trailers", (t) =>
        t["grpc-status"] === "0" ? ok() : fail(new Error(String(t["grpc-message"]))),
      );
      req.on("response", (h) => {
        if (h["grpc-status"] !== undefined && h["grpc-status"] !== "0")
          fail(new Error(String(h["grpc-message"])));
      });
      req.on("data", () => {});
      req.on("error", fail);
      req.end(body);
    });
  let counting = false;
  let stop = false;
  const counts = new Map<string, number>();
  const loops = Array.from({ length: 64 }, async (_, slot) => {
    const seq = steps(slot);
    const s = sessions[slot % 4] as http2.ClientHttp2Session;
    while (!stop) {
      for (const [path, body] of seq) {
        await call(s, path, body);
        if (counting) counts.set(path, (counts.get(path) ?? 0) + 1);
      }
    }
  });
  await new Promise((r) => setTimeout(r, WARMUP_S * 1000));
  const before = cpuSeconds(pid);
  counting = true;
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  counting = false;
  const cpu = cpuSeconds(pid) - before;
  stop = true;
  await Promise.all(loops);
  for (const s of sessions) s.close();
  const calls = [...counts.values()].reduce((a, b) => a + b, 0);
  return { calls, cpuUs: (cpu / calls) * 1e6 };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "h2rows-redis-"));
  const redis = await startRedisServer({ dir });
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
  const rows: [string, number][] = [];
  const noopPort = await freePort();
  const noop = await startNode(["bench/noop-server.ts", "grpc-js", String(noopPort)], {}, /ready/);
  const noopRow = await h2load(
    noopPort,
    "/grpc.health.v1.Health/Check",
    frame(ListSuggestionsRequestSchema, {}),
    noop.pid,
  );
  await noop.stop();
  rows.push(["grpc-js noop", noopRow.cpuUs]);
  for (const root of (process.env.BENCH_ROOTS ?? ".").split(",")) {
    const port = await freePort();
    const server = await startNode(
      [resolve(root, "server/main.ts")],
      { PORT: String(port), REDIS_URL: redis.url, LOG_LEVEL: "info" },
      /listening on/,
    );
    const tag = root === "." ? "" : ` [${root}]`;
    const get = await h2load(
      port,
      `${SVC}/GetSuggestion`,
      frame(GetSuggestionRequestSchema, {
        sessionId: c0.sessionId,
        suggestionId: c0.open[0] as string,
      }),
      server.pid,
    );
    rows.push([`GetSuggestion${tag}`, get.cpuUs]);
    const list = await h2load(
      port,
      `${SVC}/ListSuggestions`,
      frame(ListSuggestionsRequestSchema, { sessionId: c0.sessionId }),
      server.pid,
    );
    rows.push([`ListSuggestions unchanged${tag}`, list.cpuUs]);
    const settleSteps = (slot: number): [string, Buffer][] => {
      const chat = chats[slot] as (typeof chats)[number];
      const ids = { sessionId: chat.sessionId, suggestionId: chat.open[0] as string };
      return [
        [`${SVC}/DismissSuggestion`, frame(DismissSuggestionRequestSchema, ids)],
        [`${SVC}/RestoreSuggestion`, frame(RestoreSuggestionRequestSchema, ids)],
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
          frame(ListSuggestionsRequestSchema, {
            sessionId: (chats[slot] as (typeof chats)[number]).sessionId,
          }),
        ];
        return [d, l, r, l];
      },
      server.pid,
    );
    // (settle + list) pairs minus the settle alone: the List right after a change.
    rows.push([`ListSuggestions after a change${tag}`, 2 * withList.cpuUs - settle.cpuUs]);
    await server.stop();
  }
  await client.quit();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
  for (const [name, us] of rows) {
    console.log(`| ${name} | ${us.toFixed(0)} | ${(us / noopRow.cpuUs).toFixed(2)} |`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
