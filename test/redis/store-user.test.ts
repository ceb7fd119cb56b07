import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { connectRedis } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import type { SuggestServer } from "../../server/server.js";
import { grpcClients, putSession, startTestServer, tempDir, uniqueId } from "../support/harness.js";
import { ids, watch } from "../support/lists.js";
import { ROOT } from "../support/sdk-consumer.js";
import { startTestRedis } from "../support/store-server.js";
import { offer } from "../support/suggest.js";

/*
 * The service as the least-privileged user docs/redis.md gives (its `ACL SETUSER` block,
 * read from the page): every RPC works, and `ACL LOG` shows no command refused but
 * CONFIG, which the start-up check asks and then replaces with INFO, as where a managed
 * service refuses CONFIG (and the CLIENT SETNAME/SETINFO whose refusal ioredis ignores).
 */

const PASSWORD = "store-user-password";
let folder: ReturnType<typeof tempDir>;
let redis: RedisServerProcess;
let admin: Redis;
let userUrl: string;
const servers: SuggestServer[] = [];

/** The arguments of docs/redis.md's `redis-cli ACL SETUSER ...` block, password replaced. */
function documentedAcl(): string[] {
  const page = readFileSync(join(ROOT, "docs", "redis.md"), "utf8");
  const block = /^```sh\n(redis-cli ACL SETUSER [\s\S]*?)^```$/m.exec(page)?.[1];
  if (block === undefined) throw new Error("docs/redis.md has no redis-cli ACL SETUSER block");
  const words = block.replace(/\\\n/g, " ").trim().split(/\s+/);
  return words
    .slice(1)
    .map((w) => w.replace(/^'(.*)'$/, "$1").replace(/\\\|/g, "|"))
    .map((w) => (w === ">CHANGE-ME" ? `>${PASSWORD}` : w));
}

beforeAll(async () => {
  folder = tempDir("store-user");
  redis = await startTestRedis({ dir: folder.dir });
  admin = connectRedis(redis.url) as Redis;
  const acl = documentedAcl();
  expect(acl.slice(0, 3)).toEqual(["ACL", "SETUSER", "suggest-task"]);
  await admin.call(...(acl as [string, ...string[]]));
  userUrl = `redis://suggest-task:${PASSWORD}@127.0.0.1:${redis.port}`;
});

afterAll(async () => {
  for (const server of servers) await server.close();
  admin.disconnect();
  await redis.stop();
  folder.remove();
});

/** The commands `ACL LOG` says were refused since its last reset, each once, sorted. */
async function refused(): Promise<string[]> {
  const entries = (await admin.call("ACL", "LOG")) as unknown[][];
  const commands = entries.map((entry) => {
    const fields = new Map<string, unknown>();
    for (let i = 0; i + 1 < entry.length; i += 2) fields.set(String(entry[i]), entry[i + 1]);
    return `${fields.get("reason")} ${fields.get("object")}`;
  });
  return [...new Set(commands)].sort();
}

test("the user may not run CONFIG: an evicting policy is still found (INFO) and stops the start", async () => {
  const user = connectRedis(userUrl) as Redis;
  try {
    await expect(user.config("GET", "maxmemory-policy")).rejects.toThrow(/^NOPERM/);
  } finally {
    user.disconnect();
  }
  await admin.config("SET", "maxmemory-policy", "allkeys-lru");
  try {
    await expect(startTestServer(userUrl)).rejects.toThrow(
      `Redis at 127.0.0.1:${redis.port} has maxmemory-policy allkeys-lru, which evicts keys`,
    );
  } finally {
    await admin.config("SET", "maxmemory-policy", "noeviction");
  }
});

test("every RPC works as that user; ACL LOG refuses nothing but CONFIG GET", async () => {
  await admin.call("ACL", "LOG", "RESET");
  const server = await startTestServer(userUrl);
  servers.push(server);
  const clients = grpcClients(server.url);
  const workspaceId = uniqueId("ws");
  const sessionId = uniqueId("user");
  await putSession(clients, { sessionId, workspaceId });
  const watching = watch(clients, sessionId);
  const ids3: string[] = [];
  for (const title of ["First", "Second", "Third"]) {
    ids3.push((await offer(clients, { sessionId, title })).suggestion?.id ?? "");
  }
  const [first, second, third] = ids3 as [string, string, string];
  await watching.waitFor((m) => ids(m.open).includes(third));
  watching.cancel();
  expect(ids((await clients.suggestions.listSuggestions({ sessionId })).open).sort()).toEqual(
    [...ids3].sort(),
  );
  await clients.suggestions.dismissSuggestion({ sessionId, suggestionId: first });
  await clients.suggestions.restoreSuggestion({ sessionId, suggestionId: first });
  await clients.suggestions.draftSuggestion({ sessionId, suggestionId: first });
  await clients.suggestions.withdrawSuggestion({
    context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
    args: { title: "Second", reason: "Done another way" },
  });
  const { chatId } = await clients.suggestions.startSuggestion({ sessionId, suggestionId: third });
  await clients.host.postMessage({
    chatId,
    idempotencyKey: "k1",
    author: MessageAuthor.PERSON,
    text: "Thanks",
  });
  expect((await clients.local.getChat({ chatId })).chat?.chatId).toBe(chatId);
  expect(
    (await clients.suggestions.getSuggestion({ sessionId, suggestionId: second })).suggestion?.id,
  ).toBe(second);
  expect(
    (await clients.suggestions.listSettlements({ sessionId })).settlements.length,
  ).toBeGreaterThan(0);
  await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  await clients.suggestions.deleteSuggestions({ sessionId });
  // CLIENT SETNAME and SETINFO (7.2 and later), where the client library sends them, may be
  // refused: it ignores the answer.
  expect((await refused()).filter((c) => !c.startsWith("command client|"))).toEqual([
    "command config|get",
  ]);
});
