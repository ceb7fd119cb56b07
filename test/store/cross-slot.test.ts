import { createHash } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { rebuildInboxes } from "../../server/store/inbox-rebuild.js";
import { workspaceKeys } from "../../server/store/keys.js";
import { PubSub } from "../../server/store/pubsub.js";
import { loadScripts } from "../../server/store/scripts.js";
import { StartLocks } from "../../server/store/start-locks.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { WorkspaceInbox } from "../../server/store/workspace-inbox.js";
import { grpcClients, putSession, redisClient, tempDir, uniqueId } from "../support/harness.js";
import { watch } from "../support/lists.js";
import { type MonitoredCommand, startMonitor } from "../support/monitor.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";
import { startTestRedis } from "../support/store-server.js";
import { offerOne } from "../support/suggest.js";

/*
 * The workspace inbox's keys carry the workspace's own tag `{ws:<id>}`: no script or
 * transaction touches them together with a session's (inboxFlow below runs them all).
 *
 * Redis Cluster runs a script, a transaction or a multi-key command only when all its
 * keys hash to one slot; one Redis runs them anyway. So the full flow runs here on one
 * Redis of this test's own, under MONITOR, and every command it sent (scripts, the
 * commands inside them, transactions) is checked: keys as Redis itself finds them
 * (COMMAND GETKEYS), slots as Redis Cluster computes them (CLUSTER KEYSLOT, asked of a
 * cluster-enabled redis-server). A key added without the `{session}` tag, or a script
 * that builds a key in Lua, fails here, not in production on a cluster.
 */

const flow = useOwnRedis();
let slotServer: RedisServerProcess;
let slotDir: { dir: string; remove: () => void };
let oracle: Redis;
beforeAll(async () => {
  slotDir = tempDir("slots");
  slotServer = await startTestRedis({
    dir: slotDir.dir,
    extraArgs: ["--cluster-enabled", "yes"],
  });
  oracle = new Redis(slotServer.port, "127.0.0.1", { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  oracle?.disconnect();
  await slotServer?.stop();
  slotDir?.remove();
});
const t = useTestServer({
  redisUrl: () => flow.url,
  settings: { startLockTtlMs: 60 },
});

/** Every call of the service, with a few races, so that every script and path runs. */
async function fullFlow(): Promise<void> {
  const clients = grpcClients(t.server.url);
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  await clients.host.getSession({ sessionId });
  const w = watch(clients, sessionId);
  await w.waitFor(() => true);
  const context = { sessionId, turnId: "turn-a", role: AgentRole.TOP_LEVEL, toolCallId: "call-a" };
  const args = { title: "A", tldr: "a", brief: "Do A." };
  const a = (await clients.suggestions.suggestTask({ context, args })).suggestion?.id as string;
  await clients.suggestions.suggestTask({ context, args }); // a retry: the same answer
  await clients.suggestions
    .suggestTask({ context: { ...context, turnId: "turn-x" }, args: { ...args, title: "" } })
    .catch((e: unknown) => expect(e instanceof ConnectError && e.code).toBe(Code.InvalidArgument));
  const b = (await offerOne(clients, sessionId, "B")).id;
  const c = (await offerOne(clients, sessionId, "C")).id;
  await offerOne(clients, sessionId, "D").catch(() => undefined); // the open limit
  // The settle script alone, and settleAndList, as the store offers them (the service's
  // own settlements run settle-3.lua inside settleAndRead-3.lua).
  const store = new SuggestionStore(t.redis, new WorkspaceInbox(t.redis));
  await store.offer(
    sessionId,
    { id: "e", turnId: "turn-e", toolCallId: "", title: "E", tldr: "e", brief: "e" },
    true,
  );
  await store.settleAndList(sessionId, a, "dismissed");
  await store.settle(sessionId, a, "restored");
  await clients.suggestions.listSuggestions({ sessionId });
  await clients.suggestions.getSuggestion({ sessionId, suggestionId: a });
  await clients.suggestions.dismissSuggestion({ sessionId, suggestionId: a });
  await w.waitFor((m) => m.settled.length === 1);
  await clients.suggestions.restoreSuggestion({ sessionId, suggestionId: a });
  await clients.suggestions.draftSuggestion({ sessionId, suggestionId: b });
  const withdrawal = {
    context: { ...context, turnId: "turn-w", toolCallId: "call-w" },
    args: { title: "A", reason: "Done here." },
  };
  await clients.suggestions.withdrawSuggestion(withdrawal);
  await clients.suggestions.withdrawSuggestion(withdrawal); // a retry: the same answer
  const { cursor } = await clients.suggestions.listSettlements({ sessionId, after: "" });
  await clients.suggestions.listSettlements({ sessionId, after: cursor });
  // A Start refused before any chat can exist (no workspace): its options abandoned.
  await putSession(clients, { sessionId, workspaceId: "" });
  await clients.suggestions
    .startSuggestion({ sessionId, suggestionId: c, options: { model: "m" } })
    .catch((e: unknown) =>
      expect(e instanceof ConnectError && e.code).toBe(Code.FailedPrecondition),
    );
  await putSession(clients, { sessionId });
  // Racing Starts: one takes the lock, the others wait for its result.
  const starts = await Promise.all(
    Array.from({ length: 5 }, () =>
      clients.suggestions.startSuggestion({ sessionId, suggestionId: c }),
    ),
  );
  const chatId = starts[0]?.chatId as string;
  await clients.suggestions.startSuggestion({ sessionId, suggestionId: c });
  const { chat } = await clients.local.getChat({ chatId });
  const messageId = chat?.messages[0]?.messageId as string;
  await clients.local.createGoal({ chatId, messageId }).catch(() => undefined);
  await offerOne(clients, chatId, "From the started chat");
  w.cancel();
  await w.ended;
  await inboxFlow(clients);
  // A lock held long enough to be renewed, then released.
  const redis = redisClient(flow.url);
  const pubsub = new PubSub(() => subscriberConnection(redis));
  const locks = new StartLocks(redis, pubsub, { ttlMs: 60, maxHoldMs: 1_000 });
  const turn = await locks.take(sessionId, a, { until: Date.now() + 5_000 });
  if (turn.kind !== "held") throw new Error("expected the lock");
  await new Promise((r) => setTimeout(r, 150));
  await turn.lock.release("released");
  await pubsub.close();
  redis.disconnect();
  // The erasure: the chat's slot, then its workspace's.
  await clients.suggestions.deleteSuggestions({ sessionId });
  await clients.suggestions.deleteSuggestions({ sessionId: chatId });
}

/**
 * The workspace inbox: offers in two chats of one workspace announced in its index,
 * the index read page by page (pending chats fenced and read back, settled members
 * dropped), watched, deleted and rebuilt with SCAN from the logs.
 */
async function inboxFlow(clients: ReturnType<typeof grpcClients>): Promise<void> {
  const workspaceId = uniqueId("ws");
  const chats = [uniqueId(), uniqueId()];
  const inbox = watchInbox(clients, workspaceId);
  for (const sessionId of chats) {
    await putSession(clients, { sessionId, workspaceId });
    await offerOne(clients, sessionId, "One");
    await offerOne(clients, sessionId, "Two");
  }
  const first = await clients.suggestions.listWorkspaceSuggestions({ workspaceId, pageSize: 3 });
  await clients.suggestions.listWorkspaceSuggestions({
    workspaceId,
    pageToken: first.nextPageToken,
  });
  const [a, b] = first.suggestions;
  await clients.suggestions.dismissSuggestion({
    sessionId: a?.sessionId ?? "",
    suggestionId: a?.id ?? "",
  });
  await clients.suggestions.draftSuggestion({
    sessionId: b?.sessionId ?? "",
    suggestionId: b?.id ?? "",
  });
  await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  await clients.suggestions.restoreSuggestion({
    sessionId: a?.sessionId ?? "",
    suggestionId: a?.id ?? "",
  });
  const redis = redisClient(flow.url);
  const keys = workspaceKeys(workspaceId);
  await redis.del(keys.offers, keys.chats, keys.pending);
  await rebuildInboxes(redis);
  redis.disconnect();
  await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  inbox.abort();
  await inbox.ended;
}

/** WatchWorkspaceSuggestions until aborted. */
function watchInbox(clients: ReturnType<typeof grpcClients>, workspaceId: string) {
  const abort = new AbortController();
  const ended = (async () => {
    for await (const _ of clients.suggestions.watchWorkspaceSuggestions(
      { workspaceId },
      { signal: abort.signal },
    ));
  })().catch(() => undefined);
  return { ended, abort: () => abort.abort() };
}

/** The keys of one command, as Redis finds them; none for keyless commands. */
async function keysOf(command: MonitoredCommand): Promise<string[]> {
  if (command.args.length === 0) return [];
  try {
    const keys = (await oracle.call("COMMAND", "GETKEYS", command.name, ...command.args)) as
      | string[]
      | null;
    return keys ?? [];
  } catch (err) {
    if (err instanceof Error && /has no key arguments/.test(err.message)) return [];
    throw err;
  }
}

const slotOf = (key: string) => oracle.cluster("KEYSLOT", key);

/** What one client sent as one unit: a command, a script with its inner commands, or a MULTI. */
interface Unit {
  readonly label: string;
  readonly commands: MonitoredCommand[];
}

/** A script call: the keys it declared and the commands it ran. */
interface ScriptRun {
  readonly declared: readonly string[];
  readonly inner: MonitoredCommand[];
  readonly unit: Unit;
}

/**
 * Groups the commands: a script's inner commands (source `lua`) follow it at once, since
 * a script runs alone; a client's MULTI gathers its commands until EXEC.
 */
async function group(commands: readonly MonitoredCommand[]) {
  const units: Unit[] = [];
  const scripts: ScriptRun[] = [];
  const transactions = new Map<string, Unit>();
  for (const command of commands) {
    if (command.source === "lua") {
      const script = scripts.at(-1);
      if (script === undefined) throw new Error(`${command.name} ran in no script`);
      script.inner.push(command);
      script.unit.commands.push(command);
    } else if (command.name === "multi") {
      const unit: Unit = { label: `MULTI from ${command.source}`, commands: [] };
      transactions.set(command.source, unit);
      units.push(unit);
    } else if (command.name === "exec" || command.name === "discard") {
      transactions.delete(command.source);
    } else {
      let unit = transactions.get(command.source);
      if (unit === undefined) {
        unit = { label: command.name, commands: [] };
        units.push(unit);
      }
      unit.commands.push(command);
      if (command.name === "evalsha" || command.name === "eval") {
        scripts.push({ declared: await keysOf(command), inner: [], unit });
      }
    }
  }
  return { units, scripts };
}

test("every script, transaction and command of the full flow touches one slot, through tagged keys only", async () => {
  const monitor = await startMonitor(flow.process.port);
  await fullFlow();
  const marker = `end-of-flow-${uniqueId()}`;
  const probe = new Redis(flow.process.port, "127.0.0.1");
  await probe.echo(marker);
  probe.disconnect();
  await monitor.seen((c) => c.name === "echo" && c.args[0]?.toString() === marker);
  const commands = await monitor.stop();

  const { units, scripts } = await group(commands);

  let keyed = 0;
  for (const unit of units) {
    const keys = new Set<string>();
    for (const command of unit.commands) for (const key of await keysOf(command)) keys.add(key);
    if (keys.size === 0) continue;
    keyed++;
    for (const key of keys) expect(key, `${unit.label}: key without a {tag}`).toMatch(/\{[^{}]+\}/);
    const slots = new Set(await Promise.all([...keys].map(slotOf)));
    expect(slots.size, `${unit.label} spans slots: ${[...keys].join(" ")}`).toBe(1);
  }
  // Scripts never build a key: what they touch is what they declared.
  for (const script of scripts) {
    for (const command of script.inner) {
      for (const key of await keysOf(command)) {
        expect(script.declared, `a script's ${command.name} touched an undeclared key`).toContain(
          key,
        );
      }
    }
  }

  // The flow ran every script the service has; a new one must be added to it.
  const ran = new Set(
    commands.flatMap((c) =>
      c.name === "evalsha"
        ? [c.args[0]?.toString()]
        : c.name === "eval"
          ? [
              createHash("sha1")
                .update(c.args[0] as Buffer)
                .digest("hex"),
            ]
          : [],
    ),
  );
  for (const script of loadScripts()) {
    const sha = createHash("sha1").update(script.lua).digest("hex");
    expect(
      ran.has(sha),
      `script ${script.name} never ran in the flow; add a call that runs it`,
    ).toBe(true);
  }
  // (Concurrent Starts of one suggestion on one instance are one flight, so fewer than before.)
  expect(keyed).toBeGreaterThan(40);
}, 60_000);
