import { afterAll, beforeAll } from "vitest";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { RedisServerProcess } from "../../server/redis/redis-server-process.js";
import type { SuggestServer } from "../../server/server.js";
import {
  type Clients,
  grpcClients,
  ownRedis,
  redisClient,
  sharedRedisUrl,
  startTestServer,
} from "./harness.js";
import { startTestHost, type TestHost } from "./test-host.js";

/** Settings of a test server over `testServerSettings` (harness.ts). */
export type TestServerSettings = NonNullable<Parameters<typeof startTestServer>[1]>;

/** A value given now, or read when the file's `beforeAll` runs (it may need an earlier one). */
type Later<T> = T | (() => T);

/** What a file's server is started with. */
export interface TestServerOptions {
  /** The Redis the server uses; default the suite's (`sharedRedisUrl`). */
  readonly redisUrl?: Later<string>;
  /** Settings over the test defaults, e.g. `() => ({ chatHostUrl: host.url })`. */
  readonly settings?: Later<TestServerSettings>;
}

/**
 * A file's server, filled in by its `beforeAll`: reading a field before then (at the
 * file's top level) throws, so a test cannot run against a server that is not there.
 */
export interface TestServerHandle {
  readonly server: SuggestServer;
  /** The server's base URL. */
  readonly url: string;
  /** gRPC clients of the server over HTTP/2. */
  readonly clients: Clients;
  /**
   * A client (scripts defined) of the server's Redis, connected before the tests: on a
   * cluster it knows every primary (`keysOf`, `channelSubscribers` read them all).
   */
  readonly redis: RedisClient;
}

function read<T>(value: Later<T>): T {
  return typeof value === "function" ? (value as () => T)() : value;
}

/** One field of a handle: set once in `beforeAll`, read in tests. */
function slot<T>(what: string): { get: () => T; set: (v: T) => void; peek: () => T | undefined } {
  let value: T | undefined;
  return {
    get: () => {
      if (value === undefined) throw new Error(`${what} is read before the file's beforeAll`);
      return value;
    },
    set: (v) => {
      value = v;
    },
    peek: () => value,
  };
}

/**
 * The one server fixture of the suite: registers a `beforeAll` that starts a server of
 * the file's own (on the suite's Redis unless told otherwise) and an `afterAll` that
 * closes it, letting the calls in flight finish and the HTTP/2 sessions drain, and then
 * quits the Redis client once its replies are in. Call it once per server a file needs;
 * hooks run in the order they are registered, so options may read what an earlier
 * `beforeAll` made, and the `afterAll`s run in reverse.
 */
export function useTestServer(options: TestServerOptions = {}): TestServerHandle {
  const server = slot<SuggestServer>("the test server");
  const clients = slot<Clients>("the test server's clients");
  const redis = slot<RedisClient>("the test server's Redis client");
  beforeAll(async () => {
    const redisUrl = read(options.redisUrl ?? sharedRedisUrl);
    server.set(await startTestServer(redisUrl, read(options.settings ?? {})));
    clients.set(grpcClients(server.get().url));
    redis.set(redisClient(redisUrl));
    await redis.get().ping();
  });
  afterAll(async () => {
    await server.peek()?.close();
    const client = redis.peek();
    await client?.quit().catch(() => client.disconnect());
  });
  return {
    get server() {
      return server.get();
    },
    get url() {
      return server.get().url;
    },
    get clients() {
      return clients.get();
    },
    get redis() {
      return redis.get();
    },
  };
}

/** A test host of the file's own, with gRPC clients of it (its sessions and chats). */
export type TestHostHandle = TestHost & { readonly clients: Clients };

/**
 * A test chat host (test/support/test-host.ts) started before the file's tests and
 * closed after them; `host.url` is readable from the `beforeAll`s registered after it.
 */
export function useTestHost(): TestHostHandle {
  const host = slot<TestHost>("the test host");
  let clients: Clients | undefined;
  beforeAll(async () => {
    host.set(await startTestHost());
  });
  afterAll(async () => {
    await host.peek()?.close();
  });
  // Every field is the started host's; a proxy, because the host does not exist yet.
  return new Proxy({} as TestHostHandle, {
    get: (_target, key) => {
      if (key !== "clients") return Reflect.get(host.get(), key);
      clients ??= grpcClients(host.get().url);
      return clients;
    },
  });
}

/** A redis-server of a file's own (`ownRedis`), started before its tests. */
export interface OwnRedisHandle {
  readonly process: RedisServerProcess;
  readonly url: string;
}

/**
 * A redis-server of the file's own, for tests that count its keys or commands: started
 * by a `beforeAll`, stopped and its data folder removed by an `afterAll` that runs after
 * the `afterAll`s of the servers registered later (they close first).
 */
export function useOwnRedis(): OwnRedisHandle {
  const own = slot<Awaited<ReturnType<typeof ownRedis>>>("the file's redis-server");
  beforeAll(async () => {
    own.set(await ownRedis());
  });
  afterAll(async () => {
    await own.peek()?.stop();
    own.peek()?.remove();
  });
  return {
    get process() {
      return own.get();
    },
    get url() {
      return own.get().url;
    },
  };
}
