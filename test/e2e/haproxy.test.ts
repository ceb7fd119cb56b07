import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { create, type DescFile, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect, test } from "vitest";
import { file_oda_suggest_v1_chat_host } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  file_oda_suggest_v1_suggestion_service,
  SuggestionService,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import {
  AgentRole,
  createLocalHostClient,
  createSuggestionClient,
  FolderKind,
  type SuggestionClient,
} from "../../sdk/src/node.js";
import { type Haproxy, startHaproxy } from "../support/haproxy.js";
import { eventually, sharedRedisUrl, spawnService, tempDir, uniqueId } from "../support/harness.js";
import { ids } from "../support/lists.js";

/*
 * Drills of a deploy: service instances (processes of their own, SIGTERM'd as an orchestrator
 * does) behind Debian's HAProxy (test/support/haproxy.ts), callers on the SDK's defaults
 * (`createSuggestionClient({ baseUrl })` of the Node entry) and a Python grpcio client on
 * examples/python/staying_connected.py.
 */

/** The instances' shutdown: 500 ms not ready but serving (the proxy checks every 100 ms). */
const INSTANCE_ENV = { SHUTDOWN_DELAY_MS: "500", SHUTDOWN_GRACE_MS: "1000", LOG_LEVEL: "silent" };
const CHECK_INTERVAL_MS = 100;

/** A service instance on a port of its own, restartable on the same port. */
async function instance(port?: number) {
  const env = port === undefined ? INSTANCE_ENV : { ...INSTANCE_ENV, PORT: String(port) };
  const service = await spawnService(sharedRedisUrl(), env);
  const url = port === undefined ? service.url : `http://127.0.0.1:${port}`;
  return { ...service, url, port: Number(new URL(url).port) };
}
type Instance = Awaited<ReturnType<typeof instance>>;

/** Resolves once `url`'s GET /readyz answers 200. */
function ready(url: string): Promise<void> {
  return eventually(
    () =>
      fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      ),
    10_000,
  );
}

/** Resolves once a read through the proxy passes (its first checks put instances in rotation). */
function routed(proxy: Haproxy): Promise<void> {
  const client = createClient(SuggestionService, createGrpcTransport({ baseUrl: proxy.url }));
  return eventually(
    () =>
      client.listSuggestions({ sessionId: "probe" }).then(
        () => true,
        () => false,
      ),
    10_000,
  );
}

/** A session on the embedded host, put through the proxy with the SDK. */
function putSession(baseUrl: string, sessionId: string) {
  return createLocalHostClient({ baseUrl }).putSession({
    session: { sessionId, workspaceId: "ws-1", folder: FolderKind.NORMAL },
  });
}

/** The suggest_task tool call of an agent's first turn in a chat, with its tool_call_id. */
async function offerIn(client: SuggestionClient, sessionId: string, title = "Follow up") {
  const res = await client.suggestTask({
    context: { sessionId, turnId: "turn-1", role: AgentRole.TOP_LEVEL, toolCallId: "call-1" },
    args: { title, tldr: "Worth doing", brief: "Do the follow-up." },
  });
  return res.suggestion?.id ?? "";
}

/** An app's watch of one chat: every state it was given, and how its loop ended. */
function watcher(client: SuggestionClient, sessionId: string) {
  const controller = new AbortController();
  const w = { sessionId, states: [] as string[][], ended: "", stop: () => controller.abort() };
  const done = (async () => {
    try {
      for await (const m of client.watchSuggestions({ sessionId }, { signal: controller.signal })) {
        w.states.push(ids(m.open));
      }
      w.ended = "OK";
    } catch (err) {
      const e = ConnectError.from(err);
      w.ended = `${Code[e.code]}: ${e.rawMessage}`;
    }
  })();
  return Object.assign(w, { done });
}
type Watcher = ReturnType<typeof watcher>;

/** How many watchers were given `offered[i]` as their chat's one open suggestion, in time. */
async function sawOffers(watchers: readonly Watcher[], offered: readonly string[]) {
  const saw = () =>
    watchers.filter((w, i) => JSON.stringify(w.states.at(-1)) === JSON.stringify([offered[i]]));
  await eventually(async () => saw().length === watchers.length, 10_000).catch(() => undefined);
  return saw().length;
}

/** The service's protos as a FileDescriptorSet (dependencies first), for a stub-less client. */
function descriptorSet(...files: DescFile[]): Uint8Array {
  const ordered = new Map<string, DescFile>();
  const visit = (file: DescFile) => {
    if (ordered.has(file.name)) return;
    for (const dependency of file.dependencies) visit(dependency);
    ordered.set(file.name, file);
  };
  for (const file of files) visit(file);
  return toBinary(
    FileDescriptorSetSchema,
    create(FileDescriptorSetSchema, { file: [...ordered.values()].map((f) => f.proto) }),
  );
}

/** python3 from PATH when it has grpcio and protobuf, else the system's (python3-grpcio). */
function python(): string {
  const probe = spawnSync("python3", ["-c", "import grpc, google.protobuf"]);
  return probe.status === 0 ? "python3" : "/usr/bin/python3";
}

/** test/support/grpcio_drill.py through `address`, following the chat `watched`. */
function grpcioDrill(address: string, watched: string) {
  const { dir, remove } = tempDir("grpcio-drill");
  const set = `${dir}/suggest.binpb`;
  writeFileSync(
    set,
    descriptorSet(file_oda_suggest_v1_suggestion_service, file_oda_suggest_v1_chat_host),
  );
  const child = spawn(python(), ["test/support/grpcio_drill.py", address, set, watched], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const drill = {
    states: [] as string[][],
    summary: undefined as { calls: number; failures: string[]; connections: number } | undefined,
    stderr: "",
  };
  child.stderr.on("data", (c: Buffer) => {
    drill.stderr += c.toString();
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (line.startsWith("state ")) drill.states.push(JSON.parse(line.slice(6)));
    if (line.startsWith("summary ")) drill.summary = JSON.parse(line.slice(8));
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve)).finally(
    remove,
  );
  return Object.assign(drill, { child, exited });
}

test("a rolling restart of two instances behind HAProxy: 8 agent loops on the SDK's defaults lose no call, 20 watchers and a Python grpcio client see the offers made after it", async () => {
  let instances: Instance[] = await Promise.all([instance(), instance()]);
  const proxy = await startHaproxy({
    backends: instances.map((i) => i.url),
    checkIntervalMs: CHECK_INTERVAL_MS,
  });
  const baseUrl = proxy.url;
  const address = baseUrl.replace("http://", "");
  let stopped = false;
  const watchers: Watcher[] = [];
  let py: ReturnType<typeof grpcioDrill> | undefined;
  try {
    await routed(proxy);
    // 20 apps, each watching one chat on a client of its own.
    const chats = Array.from({ length: 20 }, () => uniqueId("app"));
    const pythonChat = uniqueId("py-app");
    await Promise.all([...chats, pythonChat].map((id) => putSession(baseUrl, id)));
    for (const id of chats) watchers.push(watcher(createSuggestionClient({ baseUrl }), id));
    await eventually(async () => watchers.every((w) => w.states.length > 0), 10_000);
    py = grpcioDrill(address, pythonChat);
    const drill = py;
    await eventually(async () => drill.states.length > 0, 10_000);

    // 8 agents, each offering on fresh chats for as long as the restart lasts.
    let calls = 0;
    const failures: string[] = [];
    const agents = Array.from({ length: 8 }, async () => {
      const client = createSuggestionClient({ baseUrl });
      const host = createLocalHostClient({ baseUrl });
      while (!stopped) {
        const sessionId = uniqueId("agent");
        try {
          await host.putSession({
            session: { sessionId, workspaceId: "ws-1", folder: FolderKind.NORMAL },
          });
          calls++;
          await offerIn(client, sessionId);
          calls++;
        } catch (err) {
          const e = ConnectError.from(err);
          failures.push(`${Code[e.code]}: ${e.rawMessage}`);
        }
      }
    });
    await eventually(async () => calls >= 16, 10_000);

    // The restart, one instance at a time, each back on its own port.
    for (const i of [0, 1]) {
      const old = instances[i] as Instance;
      old.child.kill("SIGTERM");
      expect(await old.exited).toBe(0);
      const restarted = await instance(old.port);
      instances = instances.map((x, j) => (j === i ? restarted : x));
      await ready(restarted.url);
      // Its first passing checks put it back in the proxy's rotation.
      await new Promise((resolve) => setTimeout(resolve, 5 * CHECK_INTERVAL_MS));
    }
    const callsDuring = calls;
    stopped = true;
    await Promise.all(agents);
    expect(failures).toEqual([]);
    expect(callsDuring).toBeGreaterThan(16);

    // After the restart: an offer in every watched chat, seen by its watcher.
    const agent = createSuggestionClient({ baseUrl });
    const offered = await Promise.all(chats.map((id) => offerIn(agent, id)));
    expect(await sawOffers(watchers, offered)).toBe(20);
    expect(watchers.map((w) => w.ended)).toEqual(chats.map(() => ""));

    const pythonOffer = await offerIn(agent, pythonChat);
    expect(await drill.exited, drill.stderr).toBe(0);
    expect(drill.states.at(-1)).toEqual([pythonOffer]);
    expect(drill.summary?.failures).toEqual([]);
    expect(drill.summary?.calls).toBeGreaterThan(0);
    // Its watch was on one of the instances, both drained: it reconnected at least once.
    expect(drill.summary?.connections).toBeGreaterThanOrEqual(2);
  } finally {
    stopped = true;
    for (const w of watchers) w.stop();
    py?.child.kill();
    await Promise.all(instances.map((i) => i.kill()));
    await proxy.stop();
  }
}, 90_000);

test("behind HAProxy: after an idle spell of twice the proxy's idle timeout, 20 of 20 SDK watchers see the next offer on the connection they had, kept by heartbeats", async () => {
  // Longer than the heartbeat period (5 s, the shortest allowed) and the clock's second of slack.
  const idleTimeoutMs = 8_000;
  const instances = await Promise.all([instance(), instance()]);
  const proxy = await startHaproxy({ backends: instances.map((i) => i.url), idleTimeoutMs });
  const baseUrl = proxy.url;
  const watchers: Watcher[] = [];
  try {
    await routed(proxy);
    const chats = Array.from({ length: 20 }, () => uniqueId("idle"));
    await Promise.all(chats.map((id) => putSession(baseUrl, id)));
    // Each app's client counts the watch calls it opens: one, if heartbeats keep the stream.
    const opened = chats.map(() => 0);
    chats.forEach((id, i) => {
      const count: Interceptor = (next) => (req) => {
        if (req.stream) opened[i] = (opened[i] ?? 0) + 1;
        return next(req);
      };
      const client = createSuggestionClient({
        baseUrl,
        watch: { heartbeatSeconds: 5 },
        interceptors: [count],
      });
      watchers.push(watcher(client, id));
    });
    // And the same stream raw, to show the heartbeats that cross the proxy.
    const raw = createSuggestionClient({ baseUrl });
    const rawSeen: boolean[] = [];
    const rawEnd = (async () => {
      try {
        for await (const m of raw.watchSuggestions(
          { sessionId: chats[0] as string, heartbeatSeconds: 5 },
          { raw: true },
        )) {
          rawSeen.push(m.heartbeat);
          if (m.open.length > 0) break;
        }
        return "OK";
      } catch (err) {
        const e = ConnectError.from(err);
        return `${Code[e.code]}: ${e.rawMessage}`;
      }
    })();
    await eventually(
      async () => watchers.every((w) => w.states.length > 0) && rawSeen.length > 0,
      10_000,
    );

    // The idle spell: twice the proxy's idle timeout, with nothing to say.
    await new Promise((resolve) => setTimeout(resolve, 2 * idleTimeoutMs + 500));
    const agent = createSuggestionClient({ baseUrl });
    const offered = await Promise.all(chats.map((id) => offerIn(agent, id)));
    expect(await sawOffers(watchers, offered)).toBe(20);
    expect(watchers.map((w) => w.ended)).toEqual(chats.map(() => ""));
    expect(opened).toEqual(chats.map(() => 1));
    expect(await rawEnd).toBe("OK");
    expect(rawSeen.slice(1, -1).every((heartbeat) => heartbeat)).toBe(true);
    // The first state, two heartbeats at least (every 5 s, give or take the clock's second), the offer.
    expect(rawSeen.length).toBeGreaterThanOrEqual(4);
  } finally {
    for (const w of watchers) w.stop();
    await Promise.all(instances.map((i) => i.kill()));
    await proxy.stop();
  }
}, 90_000);

test("behind HAProxy: a SIGTERM'd instance ends its watch UNAVAILABLE saying why, not OK", async () => {
  const service = await spawnService(sharedRedisUrl(), {
    SHUTDOWN_GRACE_MS: "2000",
    LOG_LEVEL: "silent",
  });
  const proxy = await startHaproxy({ backends: [service.url], idleTimeoutMs: 8_000 });
  try {
    const sessionId = uniqueId();
    const client = createClient(SuggestionService, createGrpcTransport({ baseUrl: proxy.url }));
    await eventually(
      () =>
        client.listSuggestions({ sessionId }).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    const ending = (async () => {
      try {
        for await (const _m of client.watchSuggestions({ sessionId, heartbeatSeconds: 5 })) {
          service.child.kill("SIGTERM");
        }
        return "OK";
      } catch (err) {
        const e = ConnectError.from(err);
        return `${Code[e.code]}: ${e.rawMessage}`;
      }
    })();
    expect(await ending).toBe("Unavailable: the server is shutting down");
    expect(await service.exited).toBe(0);
  } finally {
    await service.kill();
    await proxy.stop();
  }
}, 90_000);
