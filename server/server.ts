import { setMaxListeners } from "node:events";
import { readFile } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";
import { pino } from "pino";
import { ConfigError, defaultConfig } from "./config.js";
import { type ChatHost, createRemoteChatHost } from "./host/chat-host.js";
import { EmbeddedChatHost } from "./host/embedded-host.js";
import { traceChatHost } from "./host/traced-host.js";
import { bearerAuth, Credentials } from "./pipeline/auth.js";
import type { PipelineOptions } from "./pipeline/call-pipeline.js";
import { callRefusals } from "./pipeline/call-refusals.js";
import { type CertificateGrant, connectionValues } from "./pipeline/client-certs.js";
import { instanceMetrics } from "./pipeline/instance-metrics.js";
import { JwtVerifier } from "./pipeline/jwt-verifier.js";
import { logDestination } from "./pipeline/log-destination.js";
import { metricsPage, serveMetrics } from "./pipeline/metrics-page.js";
import { createPubSub, redisParts } from "./pipeline/redis-telemetry.js";
import { serverIdentityHeaders } from "./pipeline/server-identity.js";
import { createTelemetry, type Telemetry } from "./pipeline/telemetry.js";
import { unauthenticatedStreamCap } from "./pipeline/unauthenticated-streams.js";
import type { RedisClient } from "./redis/redis-client.js";
import { storeProblemAtStart } from "./redis/store-checks.js";
import { buildServices, mcpRoute, type RoutesDeps, routesOf } from "./routes.js";
import { Readiness } from "./rpc/readiness.js";
import { StartFlights } from "./rpc/start-flights.js";
import {
  clientCertsOf,
  clientLimitsOf,
  redisAccessOf,
  type ServerSettings,
  writeConfirmationOf,
} from "./server-settings.js";
import type { PubSub } from "./store/pubsub.js";
import { StartLocks } from "./store/start-locks.js";
import { SuggestionStore } from "./store/suggestion-store.js";
import { shuttingDown, WatchHub } from "./store/watch-hub.js";
import { WorkspaceInbox } from "./store/workspace-inbox.js";
import { createConnectAdapter } from "./transport/connect-adapter.js";
import { withCors } from "./transport/cors.js";
import { followConnections } from "./transport/drain.js";
import { createGrpcFastPath } from "./transport/grpc-fast-path/grpc-fast-path.js";
import type { DualHandler } from "./transport/handler-types.js";
import {
  listen,
  listener,
  listenMetrics,
  OPENAPI_FILE,
  pagesFallback,
} from "./transport/listeners.js";
import { configureProtobufText } from "./transport/request-text.js";

export type { ServerSettings } from "./server-settings.js";

/** What a running server exposes. */
export interface SuggestServer {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** The Redis client the server uses: one Redis, or a Redis Cluster. */
  readonly redis: RedisClient;
  /** Its logs and metrics. */
  readonly telemetry: Telemetry;
  /** Whether it should be sent calls (`GET /readyz`, grpc.health.v1). */
  readonly readiness: Readiness;
  /** Watch streams open now (also `suggest_watchers` on /metrics). */
  readonly watchers: () => number;
  /** `http://host:port` of `GET /metrics` when it has a port of its own (`METRICS_PORT`). */
  readonly metricsUrl?: string;
  /**
   * The shutdown, in the order docs/operating.md "Shutdown" gives: not ready at
   * once; serving on for `shutdownDelayMs`; then GOAWAY, calls in flight finish within
   * the grace period, watch streams end UNAVAILABLE, Redis is closed.
   */
  close(): Promise<void>;
}

/**
 * Wires the service: Redis, the chat host (remote or embedded), the routes and one port
 * serving gRPC, Connect and gRPC-Web over h2c and HTTP/1.1 (or TLS). Start-up runs in
 * named steps: protobuf's text encoding, the parts, the transports, listening.
 * Resolves once it listens.
 */
export async function startSuggestServer(settings: ServerSettings): Promise<SuggestServer> {
  // Start-up step 1, process-wide: protobuf-es encodes text through Node's Buffer
  // (server/transport/request-text.ts); its decoding is left as it is.
  configureProtobufText();
  const parts = createParts(settings, await clientCertsOf(settings));
  await refuseUnfitStore(parts, settings);
  const shutdown = new AbortController();
  // Every call in flight (each watcher, too) listens to it until it ends.
  setMaxListeners(0, shutdown.signal);
  const services = buildServices(parts);
  const readiness = parts.readiness;
  // What both transports serve calls with. With client certificates, each call carries
  // its connection's verified identity; a call refused before its handler ran is logged
  // and counted like any other.
  const valuesOf = settings.tlsClientCaFile === undefined ? undefined : connectionValues;
  const served = {
    readMaxBytes: settings.readMaxBytes,
    shutdownSignal: shutdown.signal,
    answerHeaders: serverIdentityHeaders(),
    refused: callRefusals(parts.pipeline),
    ...(valuesOf && { valuesOf }),
  };
  const fastPath =
    settings.grpcFastPath === false ? undefined : createGrpcFastPath(services, served);
  const handler = createConnectAdapter({
    ...served,
    routes: routesOf(services),
    fallback: pagesFallback(
      () => readiness.check(),
      settings.inspectorDir,
      await readFile(OPENAPI_FILE),
      // `GET /metrics` beside the RPCs, with its token, unless it has a port of its own.
      settings.metricsPort === undefined
        ? metricsPage(parts.telemetry, parts.credentials)
        : undefined,
      mcpRoute(parts, settings, served),
    ),
  });
  const limits = clientLimitsOf(settings);
  const server = await listener(settings, corsOf(settings, handler), fastPath, limits);
  const connections = followConnections(server);
  const port = await listen(server, settings, (err) =>
    parts.telemetry.logger.warn({ err }, "accepting a connection failed"),
  );
  const metrics =
    settings.metricsPort === undefined
      ? undefined
      : await listenMetrics(serveMetrics(parts.telemetry), settings.host, settings.metricsPort);
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      readiness.drain();
      // A load balancer probing /readyz (or health) stops sending calls meanwhile.
      const delayMs = settings.shutdownDelayMs ?? defaultConfig.shutdownDelayMs;
      if (delayMs > 0) await delay(delayMs);
      await connections.drain({
        graceMs: settings.shutdownGraceMs,
        // Watch streams end, UNAVAILABLE, once clients have stopped opening new ones.
        onStreamsClosing: () => shutdown.abort(shuttingDown()),
      });
      // Stops node's HTTP/1.1 timeout checks (the TLS server runs them for TLS).
      (server.h1 ?? server.h2).close();
      metrics?.server.close();
      metrics?.server.closeAllConnections();
      await closeParts(parts);
    })();
    return closing;
  };
  const scheme = settings.tlsCertFile === undefined ? "http" : "https";
  const hostInUrl = settings.host.includes(":") ? `[${settings.host}]` : settings.host;
  const { redis, telemetry, watchHub } = parts;
  const watchers = () => watchHub.watchers;
  return {
    ...{ url: `${scheme}://${hostInUrl}:${port}`, port, redis, telemetry },
    ...{ readiness, watchers, close },
    ...(metrics === undefined ? {} : { metricsUrl: `http://${hostInUrl}:${metrics.port}` }),
  };
}

/**
 * `handler` answering browsers of CORS_ALLOWED_ORIGINS (transport/cors.ts), the answers'
 * identity headers readable by their pages; `handler` itself when none are allowed.
 */
function corsOf(settings: ServerSettings, handler: DualHandler): DualHandler {
  const origins = settings.corsAllowedOrigins ?? [];
  if (origins.length === 0) return handler;
  return withCors(handler, origins, Object.keys(serverIdentityHeaders()));
}

/**
 * Stops the start, closing what `createParts` opened, on a Redis the service must not
 * run on: an evicting policy, too few replicas, a refused TLS handshake (redis/store-checks.ts).
 */
async function refuseUnfitStore(parts: Parts, settings: ServerSettings): Promise<void> {
  const { replicas } = writeConfirmationOf(settings);
  const problem = await storeProblemAtStart(parts.redis, replicas, settings);
  if (problem !== undefined) {
    await closeParts(parts);
    throw new ConfigError(problem);
  }
}

/** Closes what `createParts` opened: the watchers, Redis, the log's flushing. */
async function closeParts(parts: Parts): Promise<void> {
  parts.stopAnswerWatch();
  await parts.watchHub.close();
  await parts.pubsub.close();
  parts.stopOutageLog();
  parts.stopStoreWatch();
  await parts.redis.quit().catch(() => parts.redis.disconnect());
  parts.stopLogFlush();
  await new Promise<void>((resolve) => parts.telemetry.logger.flush(() => resolve()));
}

/** What the routes are built from, and what shutdown closes. */
type Parts = RoutesDeps & {
  readonly telemetry: Telemetry;
  /** The static tokens and JWTs calls and `GET /metrics` are checked against. */
  readonly credentials: Credentials;
  readonly redis: RedisClient;
  readonly watchHub: WatchHub;
  readonly startLocks: StartLocks;
  readonly pubsub: PubSub;
  readonly readiness: Readiness;
  readonly stopOutageLog: () => void;
  /** Stops asking whether a standalone Redis answers (redis/answer-watch.ts). */
  readonly stopAnswerWatch: () => void;
  /** Stops the eviction policy's checks and the disk's (redis/store-checks.ts). */
  readonly stopStoreWatch: () => void;
  readonly stopLogFlush: () => void;
};

/** Telemetry, Redis, the store, the chat host, the watch hub, the start locks, the pipeline. */
function createParts(
  settings: ServerSettings,
  clientCerts: ReadonlyMap<string, CertificateGrant> | undefined,
): Parts {
  // Buffered unless stdout is a terminal, and flushed every second (pipeline/log-destination.ts).
  const logOut = settings.logger ? undefined : logDestination(process.stdout.isTTY === true);
  const telemetry = createTelemetry(
    settings.logger ?? pino({ level: settings.logLevel ?? defaultConfig.logLevel }, logOut?.stream),
  );
  const { redis, stopOutageLog, answers, stopStoreWatch } = redisParts(
    settings.redisUrl,
    redisAccessOf(settings),
    writeConfirmationOf(settings),
    telemetry,
  );
  const credentials = new Credentials({
    tokens: settings.authTokens ?? [],
    jwt: settings.authJwt === undefined ? undefined : new JwtVerifier(settings.authJwt),
    clientCerts,
  });
  const pipeline: PipelineOptions = {
    // Telemetry first, so that it sees every call; auth before anything reads the request;
    // then the cap on streams open without a credential (health, reflection).
    hooks: [telemetry.hook, bearerAuth(credentials), unauthenticatedStreamCap(credentials)],
    defaultDeadlineMs: settings.defaultDeadlineMs ?? defaultConfig.defaultDeadlineMs,
    // The cap on a unary call's own work; a longer caller's deadline is accepted.
    maxDeadlineMs: settings.maxTimeoutMs,
  };
  // RETENTION_DAYS: every key of a chat expires this long after its last write; 0: never.
  const retentionMs = (settings.retentionDays ?? 0) * 86_400_000;
  const store = new SuggestionStore(
    redis,
    new WorkspaceInbox(redis, { retentionMs }),
    undefined,
    retentionMs,
  );
  // One subscriber connection for every watcher and every Start waiting on a lock of
  // this instance (test/e2e/watch-scale.test.ts, test/rpc/start-concurrency.test.ts).
  const pubsub = createPubSub(redis, answers, telemetry);
  const watchHub = new WatchHub(store, pubsub);
  const readiness = new Readiness(redis);
  const metrics = instanceMetrics(telemetry.registry, {
    watchers: () => watchHub.watchers,
    ready: () => readiness.current() === undefined,
  });
  const embeddedHost =
    settings.chatHostUrl === undefined ? new EmbeddedChatHost(redis, retentionMs) : undefined;
  const host: ChatHost = traceChatHost(
    embeddedHost ??
      createRemoteChatHost(settings.chatHostUrl as string, {
        // Each host call within the cap on a call's own work, never the caller's longer deadline.
        timeoutMs: Math.min(
          settings.chatHostTimeoutMs ?? defaultConfig.chatHostTimeoutMs,
          settings.maxTimeoutMs,
        ),
        token: settings.chatHostToken,
      }),
  );
  const startLocks = new StartLocks(
    redis,
    pubsub,
    {
      ...(settings.startLockTtlMs === undefined ? {} : { ttlMs: settings.startLockTtlMs }),
      ...(settings.startLockMaxHoldMs === undefined
        ? {}
        : { maxHoldMs: settings.startLockMaxHoldMs }),
    },
    metrics.startLockLapsed,
  );
  const stopLogFlush = () => logOut?.stop();
  return {
    ...{ telemetry, redis, store, host, embeddedHost, watchHub, startLocks, pipeline },
    ...{ pubsub, stopOutageLog, stopStoreWatch, stopLogFlush, credentials },
    stopAnswerWatch: () => answers?.stop(),
    readiness,
    startFlights: new StartFlights(),
  };
}
