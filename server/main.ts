import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ConfigError, configFromEnv, type ServiceConfig } from "./config.js";
import {
  DataDirError,
  type DataDirLock,
  lockDataDir,
  stopLeftRedis,
} from "./redis/data-dir-lock.js";
import {
  privateStoreServer,
  RedisServerMissingError,
  type RedisServerProcess,
  socketPathIn,
  startRedisServer,
  unixSocketUrl,
} from "./redis/redis-server-process.js";
import { parseRedisUrl, redact } from "./redis/redis-url.js";
import { type SuggestServer, startSuggestServer } from "./server.js";
import { redisAccessOf } from "./server-settings.js";
import { rebuildInboxes } from "./store/inbox-rebuild.js";
import { createRedisClient } from "./store/scripts.js";

/**
 * The service's entry point, and the only module that reads the environment and
 * listens. With REDIS_URL unset it locks DATA_DIR, runs a private redis-server (AOF,
 * appendfsync always, data under DATA_DIR) and stops it on exit, and on a failed start
 * too; a `redis+cluster://` REDIS_URL runs it on a Redis Cluster. A start that fails for
 * a reason the operator can fix says so in one line naming the variable.
 */
async function main(): Promise<void> {
  const command = operatorCommand(process.argv[2]);
  if (command === "help") return console.log(USAGE);
  let config = configFromEnv(process.env, openFileLimit());
  const authOn =
    config.authTokens.length > 0 ||
    config.authJwt !== undefined ||
    config.authClientCertsFile !== undefined;
  if (!authOn && !isLoopback(config.host) && !config.allowUnauthenticated) {
    console.log(
      `suggest-task: no AUTH_TOKENS (nor AUTH_JWKS_FILE or AUTH_JWKS_URL) are set, so it listens on loopback only (127.0.0.1), not on ${config.host}; ALLOW_UNAUTHENTICATED=1 listens there without credentials`,
    );
    config = { ...config, host: "127.0.0.1" };
  }
  for (const warning of startWarnings(config, authOn))
    console.warn(`suggest-task: warning: ${warning}`);
  // The OpenTelemetry SDK only when an OTLP endpoint is set; else spans are no-ops.
  const tracing =
    process.env.OTEL_SDK_DISABLED !== "true" &&
    (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
      ? (await import("./pipeline/tracing-sdk.js")).startTracing()
      : undefined;
  let lock: DataDirLock | undefined;
  let privateRedis: RedisServerProcess | undefined;
  let server: SuggestServer;
  let redisUrl = config.redisUrl;
  let executable = "redis-server";
  const release = async () => {
    await privateRedis?.stop();
    lock?.release();
  };
  try {
    // An operator command beside a running service uses the service's private Redis.
    const running =
      redisUrl === undefined && command !== undefined ? runningPrivateRedis(config) : undefined;
    if (running !== undefined) redisUrl = running;
    if (redisUrl === undefined) {
      executable = privateStoreServer(process.env.PATH ?? "");
      const dir = resolve(config.dataDir, "redis");
      const tookOver = await stopLeftRedis(config.dataDir, dir, socketPathIn(dir));
      if (tookOver !== undefined) console.log(`suggest-task: ${tookOver}`);
      lock = lockDataDir(config.dataDir);
      // On its socket alone (permissions 700) when the path fits one: cheaper than
      // loopback TCP (docs/performance.md), and no TCP port another local user could reach.
      privateRedis = await startRedisServer({
        executable,
        dir,
        unixSocket: socketPathIn(dir),
        socketOnly: true,
      });
      lock.noteRedis(privateRedis.pid);
      redisUrl = privateRedis.socketUrl ?? privateRedis.url;
    }
    if (command === "rebuild-inbox") return await rebuildInboxCommand(redisUrl, config, release);
    server = await startSuggestServer({ ...config, redisUrl });
  } catch (err) {
    await release();
    throw explained(err, config);
  }
  console.log(
    startupLine(config, server, privateRedis && { ...privateRedis, executable }, redisUrl, tracing),
  );

  const stop = async (signal: string) => {
    console.log(`${signal}: shutting down`);
    await server.close();
    await release();
    await tracing?.shutdown().catch(() => undefined);
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
}

/** How the start line names each kind of `REDIS_URL`. */
const REDIS_KIND_NAMES = {
  single: "Redis",
  cluster: "Redis Cluster",
  sentinel: "Redis Sentinel",
} as const;

/** The one line `npm start` prints: where it listens, its Redis, its host, its page. */
function startupLine(
  config: ServiceConfig,
  server: SuggestServer,
  privateRedis: (RedisServerProcess & { readonly executable: string }) | undefined,
  redisUrl: string,
  tracing: unknown,
): string {
  const parts = [
    authSummary(config),
    ...(server.metricsUrl ? [`metrics at ${server.metricsUrl}/metrics`] : []),
    `suggest-task listening on ${server.url} (gRPC, Connect and gRPC-Web; ${
      config.tlsCertFile === undefined ? "h2c and HTTP/1.1" : "HTTP/2 and HTTP/1.1 over TLS"
    })`,
    privateRedis
      ? `private ${privateRedis.executable} on ${privateRedis.url}${privateRedis.socketUrl && privateRedis.socketUrl !== privateRedis.url ? ` and ${privateRedis.socketUrl}` : ""}, data in ${privateRedis.dir}`
      : `${REDIS_KIND_NAMES[parseRedisUrl(redisUrl).kind]} at ${redact(redisUrl)}`,
    config.chatHostUrl ? `chat host at ${config.chatHostUrl}` : "embedded chat host",
    ...(tracing !== undefined ? ["traces to the OTLP endpoint"] : []),
    existsSync(join(config.inspectorDir, "index.html"))
      ? `inspector page at ${server.url}/`
      : `inspector page not built (run npm run build; ${config.inspectorDir} has no index.html)`,
  ];
  return parts.join("; ");
}

/** The operator commands, run as `node dist/server/main.js <command>`. */
const COMMANDS = {
  "rebuild-inbox":
    "recreates every workspace inbox's index from the chats' logs, then exits; safe while the service runs",
} as const;

const USAGE = [
  "usage: node dist/server/main.js [command]",
  "",
  "Without a command, starts the service (configured by the environment: docs/operating.md).",
  "",
  "commands (REDIS_URL as for the service; unset, the private Redis of DATA_DIR, the running",
  "service's when there is one):",
  ...Object.entries(COMMANDS).map(([name, text]) => `  ${name.padEnd(15)}${text}`),
  "  --help         prints this",
].join("\n");

/** The operator command `arg` names ("help" for --help), undefined for none; unknown throws. */
function operatorCommand(arg: string | undefined): keyof typeof COMMANDS | "help" | undefined {
  if (arg === undefined) return undefined;
  if (arg === "--help" || arg === "-h" || arg === "help") return "help";
  if (arg in COMMANDS) return arg as keyof typeof COMMANDS;
  throw new ConfigError(`unknown command ${JSON.stringify(arg)}; --help lists them`);
}

/**
 * The URL of the private redis-server a running service holds DATA_DIR for (its Unix
 * socket), or undefined when DATA_DIR is free (the command starts its own then).
 */
function runningPrivateRedis(config: ServiceConfig): string | undefined {
  try {
    lockDataDir(config.dataDir).release();
    return undefined;
  } catch (err) {
    const socket = socketPathIn(resolve(config.dataDir, "redis"));
    if (!(err instanceof DataDirError) || err.holder === undefined) throw err;
    if (socket === undefined || !existsSync(socket)) throw err;
    return unixSocketUrl(socket);
  }
}

/** `main.js rebuild-inbox`: recreates the workspace inbox indexes from the logs, then exits. */
async function rebuildInboxCommand(
  redisUrl: string,
  config: ServiceConfig,
  release: () => Promise<void>,
): Promise<void> {
  const redis = createRedisClient(redisUrl, undefined, redisAccessOf(config));
  const report = await rebuildInboxes(redis);
  console.log(`rebuilt the inbox of ${report.announced} chat(s) from ${report.chats} log(s)`);
  await redis.quit();
  await release();
  process.exit(0);
}

/** A start failure the operator can fix, as a ConfigError naming the variable. */
function explained(err: unknown, config: ServiceConfig): unknown {
  if (err instanceof DataDirError) {
    const hint = err.holder
      ? `; stop it first (kill ${err.holder.pid}) or set another DATA_DIR`
      : "";
    return new ConfigError(`DATA_DIR ${config.dataDir} ${err.message}${hint}`);
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "EADDRINUSE") {
    return new ConfigError(
      `PORT ${config.port} is in use on ${config.host}; set PORT to a free port (0 picks one)`,
    );
  }
  if (code === "EACCES" || code === "EADDRNOTAVAIL") {
    return new ConfigError(
      `PORT ${config.port} on HOST ${config.host} cannot be listened on (${code})`,
    );
  }
  return err;
}

/** The process's limit on open files (Linux), which bounds its connections. */
function openFileLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a deployment should know before it takes traffic: a service open to every caller
 * that reaches it, and started chats kept in the embedded host where no one else sees
 * them. Both are said on a non-loopback address only, where they matter.
 */
function startWarnings(config: ServiceConfig, authOn: boolean): string[] {
  if (isLoopback(config.host)) return [];
  return [
    ...(authOn
      ? []
      : [
          `ALLOW_UNAUTHENTICATED=1: open on ${config.host} with no credentials; every caller that reaches it is trusted, so a mesh or gateway must authenticate them`,
        ]),
    ...(config.chatHostUrl === undefined
      ? [
          "CHAT_HOST_URL is not set: started chats stay inside this service's embedded chat host until CHAT_HOST_URL names the product's chat host",
        ]
      : []),
  ];
}

/** The start-up line's part about auth. */
function authSummary(config: ServiceConfig): string {
  const kinds = [
    ...(config.authTokens.length > 0 ? [`${config.authTokens.length} token(s)`] : []),
    ...(config.authJwt ? [`JWTs of ${config.authJwt.issuer}`] : []),
  ];
  const certs = config.authClientCertsFile ? "; client certificates mapped to roles" : "";
  return kinds.length > 0
    ? `bearer auth: ${kinds.join(" and ")}${certs}`
    : certs !== ""
      ? "client certificates mapped to roles"
      : config.allowUnauthenticated && !isLoopback(config.host)
        ? "no auth (ALLOW_UNAUTHENTICATED=1)"
        : "no auth (AUTH_TOKENS unset): loopback only";
}

/** True for addresses only this machine can reach. */
function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof RedisServerMissingError) {
    console.error(`suggest-task: ${err.message}`);
  } else {
    console.error("suggest-task failed to start:", err);
  }
  process.exit(1);
});
