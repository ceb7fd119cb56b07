import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { type Clients, putSession, uniqueId } from "./harness.js";
import { ids, watch } from "./lists.js";
import { ROOT } from "./sdk-consumer.js";
import { offer } from "./suggest.js";

/** The user docs/redis.md's ACL makes. */
export const STORE_USER = "suggest-task";

/**
 * The arguments of docs/redis.md's `redis-cli ACL SETUSER ...` block (read from the
 * page, so the page shows what the tests run), with `password` for its placeholder.
 */
export function documentedAcl(password: string): string[] {
  const page = readFileSync(join(ROOT, "docs", "redis.md"), "utf8");
  const block = /^```sh\n(redis-cli ACL SETUSER [\s\S]*?)^```$/m.exec(page)?.[1];
  if (block === undefined) throw new Error("docs/redis.md has no redis-cli ACL SETUSER block");
  return block
    .replace(/\\\n/g, " ")
    .trim()
    .split(/\s+/)
    .slice(1)
    .map((word) => word.replace(/^'(.*)'$/, "$1").replace(/\\\|/g, "|"))
    .map((word) => (word === ">CHANGE-ME" ? `>${password}` : word));
}

/**
 * The commands `ACL LOG` of `node` says were refused since its last reset, as
 * `<reason> <command>`, each once, sorted; without CLIENT SETNAME and SETINFO (7.2 and
 * later), which the client library sends where it may and whose refusal it ignores.
 */
export async function refusedCommands(node: Redis): Promise<string[]> {
  const entries = (await node.call("ACL", "LOG")) as unknown[][];
  const commands = entries.map((entry) => {
    const fields = new Map<string, unknown>();
    for (let i = 0; i + 1 < entry.length; i += 2) fields.set(String(entry[i]), entry[i + 1]);
    return `${fields.get("reason")} ${fields.get("object")}`;
  });
  return [...new Set(commands)].filter((c) => !c.startsWith("command client|")).sort();
}

/**
 * Calls every kind of RPC once on a chat of its own (offers, a watch, the lists, each
 * settlement, a withdrawal, a Start and the started chat, the workspace inbox, the
 * erasure), each of which must succeed.
 */
export async function callEveryRpc(clients: Clients): Promise<void> {
  const workspaceId = uniqueId("ws");
  const sessionId = uniqueId("user");
  await putSession(clients, { sessionId, workspaceId });
  const watching = watch(clients, sessionId);
  const offered: string[] = [];
  for (const title of ["First", "Second", "Third"]) {
    offered.push((await offer(clients, { sessionId, title })).suggestion?.id ?? "");
  }
  const [first, second, third] = offered as [string, string, string];
  await watching.waitFor((m) => ids(m.open).includes(third));
  watching.cancel();
  const lists = await clients.suggestions.listSuggestions({ sessionId });
  if (ids(lists.open).sort().join() !== [...offered].sort().join()) {
    throw new Error(`ListSuggestions answered ${ids(lists.open)}, not ${offered}`);
  }
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
  await clients.local.getChat({ chatId });
  await clients.suggestions.getSuggestion({ sessionId, suggestionId: second });
  await clients.suggestions.listSettlements({ sessionId });
  await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  await clients.suggestions.deleteSuggestions({ sessionId });
}
