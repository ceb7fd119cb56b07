import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Cluster } from "ioredis";
import { inject } from "vitest";
import {
  ChatHostService,
  FolderKind,
  LocalHostService,
  type Session,
  SessionSchema,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { freePort, type RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { type SuggestServer, startSuggestServer } from "../../server/server.js";
import { createRedisClient } from "../../server/store/scripts.js";
import { startTestRedis } from "./store-server.js";

/** The suite's shared redis-server (test/support/global-setup.ts). */
export function sharedRedisUrl(): string {
  const urls = inject("redisUrls");
  if (urls === undefined || urls.length === 0) return inject("redisUrl");
  const worker = Number(process.env.VITEST_POOL_ID ?? "1");
  return urls[(worker - 1) % urls.length] as string;
}

/** A session id no other test uses. */
export function uniqueId(prefix = "s"): string {
  return `${prefix}-${randomUUID()}`;
}

/** Default settings of a test server: port 0 on loopback. */
export const testServerSettings = {
  host: "127.0.0.1",
  port: 0,
  chatHostUrl: undefined,
  readMaxBytes: 256 * 1024,
  maxTimeoutMs: 60_000,
  shutdownGraceMs: 2_000,
  logLevel: "silent",
} as const;

/** A server in this process, listening on a real port (HTTP/2 and HTTP/1.1). */
export async function startTestServer(
  redisUrl = sharedRedisUrl(),
  overrides: Partial<Parameters<typeof startSuggestServer>[0]> = {},
): Promise<SuggestServer> {
  return startSuggestServer({ ...testServerSettings, redisUrl, ...overrides });
}

/** Clients of a server over real gRPC on HTTP/2. */
export interface Clients {
  readonly transport: Transport;
  readonly suggestions: Client<typeof SuggestionService>;
  readonly local: Client<typeof LocalHostService>;
  /** The chat host's three RPCs, as the service calls them. */
  readonly host: Client<typeof ChatHostService>;
}

/** gRPC clients of the server at `baseUrl`. */
export function grpcClients(baseUrl: string): Clients {
  const transport = createGrpcTransport({ baseUrl });
  return {
    transport,
    suggestions: createClient(SuggestionService, transport),
    local: createClient(LocalHostService, transport),
    host: createClient(ChatHostService, transport),
  };
}

/** Puts a session on the embedded host: a normal folder in a workspace unless told otherwise. */
export async function putSession(
  clients: Clients,
  init: Partial<Omit<Session, "$typeName">> & { sessionId: string },
): Promise<Session> {
  const session = create(SessionSchema, {
    workspaceId: "ws-1",
    folder: FolderKind.NORMAL,
    ...init,
  });
  await clients.local.putSession({ session });
  return session;
}

/** A temporary folder removed by the returned function. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `suggest-task-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A redis-server of a test's own, which it may kill and restart (AOF on). */
export async function ownRedis(): Promise<RedisServerProcess & { remove: () => void }> {
  const { dir, remove } = tempDir("redis");
  const server = await startTestRedis({ dir });
  return Object.assign(server, { remove });
}

/**
 * A Redis client (with the service's scripts defined) for reading what a call recorded:
 * a `Cluster` when the suite runs on a Redis Cluster (`npm run test:cluster`).
 */
export function redisClient(url = sharedRedisUrl()): RedisClient {
  return createRedisClient(url);
}

/**
 * Subscribers of a shard channel (PUBSUB SHARDNUMSUB): on a cluster, the sum over its
 * primaries (only the primary of the channel's slot holds its subscribers).
 */
export async function channelSubscribers(redis: RedisClient, channel: string): Promise<number> {
  let total = 0;
  for (const node of redis instanceof Cluster ? redis.nodes("master") : [redis]) {
    const reply = (await node.pubsub("SHARDNUMSUB", channel)) as [string, number];
    total += Number(reply[1]);
  }
  return total;
}

/** A service process of its own (server/main.ts under tsx), which a test may kill -9. */
export interface ServiceProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Waits for the process to exit; resolves its exit code or signal. */
  readonly exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/**
 * Spawns `server/main.ts` on a free port against `redisUrl` (undefined: the service
 * starts its own private redis-server, as `npm start` does); resolves once it listens.
 * `wrapper` runs it under a command that execs it (e.g. `prlimit --nofile=1024:1024`).
 */
export async function spawnService(
  redisUrl: string | undefined,
  env: Record<string, string> = {},
  wrapper: readonly string[] = [],
): Promise<ServiceProcess & { readonly output: () => string }> {
  const port = await freePort();
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    HOST: "127.0.0.1",
    PORT: String(port),
    REDIS_URL: redisUrl,
    ...env,
  };
  if (redisUrl === undefined) delete childEnv.REDIS_URL;
  const command = [...wrapper, process.execPath, "--import", "tsx", "server/main.ts"];
  const child = spawn(command[0] as string, command.slice(1), {
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)),
  );
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("listening on")) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    void exited.then((code) => reject(new Error(`service exited (${code}):\n${output}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    exited,
    output: () => output,
    kill: async (signal = "SIGKILL") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Awaits a call that must fail, and answers its ConnectError. */
export async function connectErrorOf(call: Promise<unknown>): Promise<ConnectError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ConnectError))
    throw new Error(`expected a ConnectError, got ${String(err)}`);
  return err;
}

/**
 * Waits until `check` answers true, polling every 20 ms; throws after `ms` (a generous
 * bound: the condition is awaited, never timed).
 */
export async function eventually(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
