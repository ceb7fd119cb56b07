import { Code } from "@connectrpc/connect";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { connectRedis } from "../../server/redis/redis-client.js";
import type { SuggestServer } from "../../server/server.js";
import { sessionKeys, workspaceKeys } from "../../server/store/keys.js";
import {
  connectErrorOf,
  grpcClients,
  ownRedis,
  putSession,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { offerOne } from "../support/suggest.js";
import {
  type Answer,
  answerOf,
  clientsWith,
  methodOf,
  type Protocol,
  type RpcName,
  rpcBattery,
} from "../support/tenant-auth.js";

/*
 * Redis out of memory (`maxmemory` reached under `noeviction`): every read RPC answers
 * what the chats' logs say, as it did before, though the caches it reads (a chat's
 * projection, the workspace inbox) need writing back; every write RPC answers
 * RESOURCE_EXHAUSTED; and nothing in Redis changes, not a byte.
 */

const OUT_OF_MEMORY = "the suggestion store is out of memory";
const READS = [
  "ListSuggestions",
  "GetSuggestion",
  "WatchSuggestions",
  "ListSettlements",
  "ListWorkspaceSuggestions",
  "WatchWorkspaceSuggestions",
] as const satisfies readonly RpcName[];
const WRITES = [
  "SuggestTask",
  "WithdrawSuggestion",
  "StartSuggestion",
  "DraftSuggestion",
  "DismissSuggestion",
  "RestoreSuggestion",
  "DeleteSuggestions",
] as const satisfies readonly RpcName[];

let own: Awaited<ReturnType<typeof ownRedis>>;
let admin: Redis;
let server: SuggestServer;
beforeAll(async () => {
  own = await ownRedis();
  admin = connectRedis(own.url) as Redis;
  server = await startTestServer(own.url);
});
afterAll(async () => {
  await server?.close();
  admin?.disconnect();
  await own?.stop();
  own?.remove();
});

/** Every key of the file's Redis with its DUMP and its time to live: its whole content. */
async function contents(): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  let cursor = "0";
  do {
    const [next, keys] = await admin.scan(cursor, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      const dump = await admin.dumpBuffer(key);
      found.set(key, `${dump?.toString("hex")} ${await admin.pttl(key)}`);
    }
  } while (cursor !== "0");
  return new Map([...found].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * A workspace of three chats with offers open, started, drafted, dismissed and
 * restored, and settlements of each kind: answers the chats, each with its offers' ids.
 */
async function seedWorkspace(workspaceId: string) {
  const clients = grpcClients(server.url);
  const s = clients.suggestions;
  const chats: { sessionId: string; ids: string[] }[] = [];
  for (let c = 0; c < 3; c++) {
    const sessionId = uniqueId(`oom-${c}`);
    await putSession(clients, { sessionId, workspaceId });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await offerOne(clients, sessionId, `Offer ${c}.${i}`)).id);
    }
    chats.push({ sessionId, ids });
  }
  const [a, b, c] = chats as [(typeof chats)[0], (typeof chats)[0], (typeof chats)[0]];
  await s.startSuggestion({ sessionId: a.sessionId, suggestionId: a.ids[0] ?? "" });
  await s.draftSuggestion({ sessionId: a.sessionId, suggestionId: a.ids[1] ?? "" });
  await s.dismissSuggestion({ sessionId: b.sessionId, suggestionId: b.ids[0] ?? "" });
  await s.restoreSuggestion({ sessionId: b.sessionId, suggestionId: b.ids[0] ?? "" });
  await s.dismissSuggestion({ sessionId: b.sessionId, suggestionId: b.ids[1] ?? "" });
  await s.dismissSuggestion({ sessionId: c.sessionId, suggestionId: c.ids[2] ?? "" });
  // One more offer in each chat, now that one of its three is settled.
  for (const [i, chat] of chats.entries()) {
    chat.ids.push((await offerOne(clients, chat.sessionId, `Offer ${i}.3`)).id);
  }
  return chats;
}

/** What every read RPC answers about the workspace and each of its chats. */
async function readAnswers(
  protocol: Protocol,
  workspaceId: string,
  chats: readonly { sessionId: string; ids: string[] }[],
): Promise<Record<string, Answer>> {
  const s = clientsWith(server.url, undefined, protocol).suggestions;
  const answers: Record<string, Answer> = {};
  for (const { sessionId, ids } of chats) {
    for (const suggestionId of [...ids, "no-such-offer"]) {
      const battery = rpcBattery(s, { sessionId, suggestionId, workspaceId });
      for (const name of READS) {
        answers[`${name} ${sessionId} ${suggestionId}`] = await answerOf(
          methodOf(name),
          battery[name](),
        );
      }
    }
    const all = await s.listSettlements({ sessionId, after: "" });
    const from = all.settlements[0]?.cursor ?? "";
    answers[`ListSettlements ${sessionId} after ${from}`] = await answerOf(
      methodOf("ListSettlements"),
      s.listSettlements({ sessionId, after: from }),
    );
  }
  // The workspace's inbox page by page.
  let pageToken = "";
  for (let page = 0; page < 10; page++) {
    const call = s.listWorkspaceSuggestions({ workspaceId, pageSize: 2, pageToken });
    answers[`ListWorkspaceSuggestions page ${page}`] = await answerOf(
      methodOf("ListWorkspaceSuggestions"),
      call,
    );
    pageToken = (await call).nextPageToken;
    if (pageToken === "") break;
  }
  return answers;
}

test("out of memory: every read answers as before without writing its caches back; every write is RESOURCE_EXHAUSTED; nothing changes", async () => {
  const workspaceId = uniqueId("ws-oom");
  const chats = await seedWorkspace(workspaceId);
  const [a, b, c] = chats as [(typeof chats)[0], (typeof chats)[0], (typeof chats)[0]];
  const before = await readAnswers("grpc", workspaceId, chats);
  // Every chat answers something worth comparing.
  expect(Object.values(before).filter((x) => "ok" in x).length).toBeGreaterThan(40);

  // Caches that a read must write back: a chat's projection gone, a chat pending in the
  // workspace's inbox (as after an announcement no write followed), an offer's record
  // gone from the inbox.
  await admin.del(sessionKeys(a.sessionId).projection);
  const inbox = workspaceKeys(workspaceId);
  await admin.sadd(inbox.pending, b.sessionId);
  const members = (await admin.hget(inbox.chats, `m:${c.sessionId}`))?.split(" ") ?? [];
  expect(members.length).toBeGreaterThan(0);
  await admin.hdel(inbox.docs, members[0] ?? "");

  // Redis full: its limit below what it holds.
  const used = Number(/^used_memory:(\d+)/m.exec(await admin.info("memory"))?.[1]);
  await admin.config("SET", "maxmemory", String(used - 256 * 1024));
  try {
    const held = await contents();
    for (const protocol of ["grpc", "connect"] as const) {
      expect(await readAnswers(protocol, workspaceId, chats)).toEqual(before);
      const s = clientsWith(server.url, undefined, protocol).suggestions;
      const target = { sessionId: b.sessionId, suggestionId: b.ids[0] ?? "", workspaceId };
      const battery = rpcBattery(s, target);
      for (const name of WRITES) {
        const err = await connectErrorOf(battery[name]());
        expect([name, Code[err.code], err.rawMessage]).toEqual([
          name,
          "ResourceExhausted",
          OUT_OF_MEMORY,
        ]);
      }
      // A dismissed offer's restore, a chat's session on the embedded host.
      const restore = await connectErrorOf(
        s.restoreSuggestion({ sessionId: b.sessionId, suggestionId: b.ids[1] ?? "" }),
      );
      expect([Code[restore.code], restore.rawMessage]).toEqual([
        "ResourceExhausted",
        OUT_OF_MEMORY,
      ]);
      const local = clientsWith(server.url, undefined, protocol).local;
      const put = await connectErrorOf(
        local.putSession({ session: { sessionId: uniqueId("oom-new"), workspaceId } }),
      );
      expect([Code[put.code], put.rawMessage]).toEqual(["ResourceExhausted", OUT_OF_MEMORY]);
    }
    // Not a byte written, by the reads nor by the writes.
    expect(await contents()).toEqual(held);
  } finally {
    await admin.config("SET", "maxmemory", "0");
  }
  const metrics = await server.telemetry.registry.getSingleMetricAsString(
    "suggest_store_refusals_total",
  );
  expect(metrics).toMatch(/suggest_store_refusals_total\{kind="out-of-memory"\} [1-9]/);

  // Memory back: the reads write their caches back, and answer the same.
  expect(await readAnswers("grpc", workspaceId, chats)).toEqual(before);
  expect(await admin.exists(sessionKeys(a.sessionId).projection)).toBe(1);
  expect(await admin.smembers(inbox.pending)).toEqual([]);
});

test("the reads and writes checked are every RPC of the service", () => {
  expect([...READS, ...WRITES].sort()).toEqual(SuggestionService.methods.map((m) => m.name).sort());
});
