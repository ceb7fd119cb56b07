import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { delimiter, join, resolve as resolvePath } from "node:path";

/** How to run a private `redis-server`. */
export interface RedisServerOptions {
  /** Where it keeps its AOF files; created when missing. */
  readonly dir: string;
  /** The port; a free one when omitted. */
  readonly port?: number;
  /**
   * A Unix socket to listen on as well (an absolute path, permissions 700: its owner
   * only), for a client on the same machine: a round trip costs both sides less than
   * over loopback TCP (docs/performance.md).
   */
  readonly unixSocket?: string | undefined;
  /**
   * With `unixSocket`: listen on the socket alone, no TCP port (`--port 0`), so that only
   * its owner reaches it (`npm start`'s private Redis); `url` is then the socket's.
   */
  readonly socketOnly?: boolean;
  /** Extra `redis-server` arguments (e.g. cluster settings). */
  readonly extraArgs?: readonly string[];
  /** The executable; `redis-server` on PATH by default. */
  readonly executable?: string;
}

/** A running private `redis-server`. */
export interface RedisServerProcess {
  readonly port: number;
  readonly url: string;
  /** `unix://<path>` when it listens on a Unix socket too (`unixSocket`). */
  readonly socketUrl: string | undefined;
  readonly dir: string;
  readonly pid: number;
  /** The version it logs at start (`Redis version=7.0.15, ...`, `Valkey version=8.0.1, ...`). */
  readonly version: string | undefined;
  /** Asks it to shut down cleanly (SIGTERM: the AOF is flushed) and waits for the exit. */
  stop(): Promise<void>;
  /** Kills it with SIGKILL, as a crash would, and waits for the exit. */
  kill(): Promise<void>;
}

/** Thrown when no `redis-server` is installed; its message says what to do. */
export class RedisServerMissingError extends Error {
  constructor(executable: string) {
    super(
      `REDIS_URL is not set, and ${executable} (to run a private Redis) was not found on PATH. Set REDIS_URL to a Redis you run, or install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis).`,
    );
    this.name = "RedisServerMissingError";
  }
}

/** The servers a private store may run, in the order they are looked for on PATH. */
export const PRIVATE_STORE_SERVERS = Object.freeze(["redis-server", "valkey-server"] as const);

/**
 * The first of `redis-server` and `valkey-server` found on `path` (a PATH value), for a
 * private store: Valkey serves the same commands and files. Neither there: throws
 * RedisServerMissingError before anything is locked or started.
 */
export function privateStoreServer(path: string): (typeof PRIVATE_STORE_SERVERS)[number] {
  const dirs = path.split(delimiter).filter((dir) => dir !== "");
  for (const name of PRIVATE_STORE_SERVERS) {
    if (dirs.some((dir) => isExecutable(join(dir, name)))) return name;
  }
  throw new RedisServerMissingError(PRIVATE_STORE_SERVERS[0]);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a `redis-server` of its own with AOF on and `appendfsync always`, so that an
 * acknowledged write survives a crash of Redis too, and resolves once it accepts
 * connections. A port lost to a race is retried on another.
 */
export async function startRedisServer(options: RedisServerOptions): Promise<RedisServerProcess> {
  mkdirSync(options.dir, { recursive: true });
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = options.port ?? (await freePort());
    try {
      return await spawnRedis(options, port);
    } catch (err) {
      if (err instanceof RedisServerMissingError || options.port !== undefined) throw err;
      lastError = err;
    }
  }
  throw lastError;
}

function spawnRedis(options: RedisServerOptions, port: number): Promise<RedisServerProcess> {
  const executable = options.executable ?? "redis-server";
  const args = [
    "--port",
    options.socketOnly === true && options.unixSocket !== undefined ? "0" : String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    options.dir,
    "--appendonly",
    "yes",
    "--appendfsync",
    "always",
    "--save",
    "",
    "--daemonize",
    "no",
    "--logfile",
    "",
    "--loglevel",
    "notice",
    ...(options.unixSocket === undefined
      ? []
      : ["--unixsocket", options.unixSocket, "--unixsocketperm", "700"]),
    ...(options.extraArgs ?? []),
  ];
  const child = spawn(executable, args, { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      // "Ready to accept connections tcp", or on a socket alone "... ready to accept connections at <path>".
      if (/ready to accept connections/i.test(output)) {
        child.stdout?.off("data", onData);
        child.stdout?.resume();
        const version = /\bversion=([^\s,]+)/.exec(output)?.[1];
        resolve(handle(child, exited, port, version, options));
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("error", (err: NodeJS.ErrnoException) => {
      reject(err.code === "ENOENT" ? new RedisServerMissingError(executable) : err);
    });
    child.once("exit", (code, signal) => {
      reject(new Error(`${executable} exited (${code ?? signal}) before it was ready:\n${output}`));
    });
  });
}

function handle(
  child: ChildProcess,
  exited: Promise<void>,
  port: number,
  version: string | undefined,
  { dir, unixSocket, socketOnly }: RedisServerOptions,
): RedisServerProcess {
  const signal = async (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    await exited;
  };
  return {
    port,
    url:
      socketOnly === true && unixSocket !== undefined
        ? unixSocketUrl(unixSocket)
        : `redis://127.0.0.1:${port}`,
    socketUrl: unixSocket === undefined ? undefined : unixSocketUrl(unixSocket),
    dir,
    pid: child.pid ?? 0,
    version,
    stop: () => signal("SIGTERM"),
    kill: () => signal("SIGKILL"),
  };
}

/** The longest socket path a `sockaddr_un` takes on every platform Redis runs on, less room. */
const MAX_SOCKET_PATH = 100;

/**
 * `<dir>/redis.sock` as an absolute path, when it fits a Unix socket's address (about 100
 * bytes); undefined when it does not, and the server is then reached over TCP alone.
 */
export function socketPathIn(dir: string): string | undefined {
  const path = resolvePath(dir, "redis.sock");
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH ? path : undefined;
}

/** `unix://` and the path, each part percent-encoded (redis-url.ts decodes it). */
export function unixSocketUrl(path: string): string {
  return `unix://${path.split("/").map(encodeURIComponent).join("/")}`;
}
