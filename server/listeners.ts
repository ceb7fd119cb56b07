import { readFile } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { defaultConfig } from "./config.js";
import { type Credentials, holdsRole } from "./pipeline/auth.js";
import type { Telemetry } from "./pipeline/telemetry.js";
import type { Readiness } from "./rpc/readiness.js";
import type { ServerSettings } from "./server-settings.js";
import type { ClientLimits } from "./transport/connection-guard.js";
import type { DualHandler, StreamHandler } from "./transport/handler-types.js";
import {
  createOnePortServer,
  createTlsOnePortServer,
  type OnePortServer,
} from "./transport/one-port.js";
import { probes } from "./transport/probes.js";
import { staticFiles } from "./transport/static-files.js";

/** Listens on the configured address; resolves the port. */
export async function listen(
  server: OnePortServer,
  settings: ServerSettings,
  telemetry: Telemetry,
): Promise<number> {
  const { tcp } = server;
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(settings.port, settings.host, () => resolve());
  });
  // Accepting can fail (EMFILE when the process is out of file descriptors); the server
  // goes on listening, and an unhandled 'error' would end the process. Said every 5 s at most.
  let acceptWarnedAt = 0;
  tcp.on("error", (err) => {
    if (Date.now() - acceptWarnedAt < 5_000) return;
    acceptWarnedAt = Date.now();
    telemetry.logger.warn({ err }, "accepting a connection failed");
  });
  return (tcp.address() as AddressInfo).port;
}

/** HTTP/2 settings sized for many concurrent streams (watchers) per connection. */
const H2_SETTINGS = { maxConcurrentStreams: 1000 };

/** The listening server: TLS when a certificate is configured, else cleartext h2c and HTTP/1.1. */
export async function listener(
  settings: ServerSettings,
  handler: DualHandler,
  fastPath: StreamHandler | undefined,
): Promise<OnePortServer> {
  if (settings.tlsCertFile === undefined || settings.tlsKeyFile === undefined) {
    return createOnePortServer(
      handler,
      { settings: H2_SETTINGS, maxSessionMemory: 64 },
      fastPath,
      clientLimitsOf(settings),
    );
  }
  const [cert, key, ca] = await Promise.all([
    readFile(settings.tlsCertFile),
    readFile(settings.tlsKeyFile),
    settings.tlsClientCaFile === undefined ? undefined : readFile(settings.tlsClientCaFile),
  ]);
  // TLS_CLIENT_CA_FILE: a client without a certificate its CAs signed fails the handshake.
  const clientAuth = ca === undefined ? {} : { ca, requestCert: true, rejectUnauthorized: true };
  return createTlsOnePortServer(
    handler,
    { cert, key, ...clientAuth, settings: H2_SETTINGS, maxSessionMemory: 64 },
    fastPath,
    clientLimitsOf(settings),
  );
}

/** The client limits of the settings, the defaults for those unset. */
function clientLimitsOf(settings: ServerSettings): ClientLimits {
  return {
    firstBytesTimeoutMs: settings.firstBytesTimeoutMs ?? defaultConfig.firstBytesTimeoutMs,
    headersTimeoutMs: settings.headersTimeoutMs ?? defaultConfig.headersTimeoutMs,
    requestTimeoutMs: settings.requestTimeoutMs ?? defaultConfig.requestTimeoutMs,
    idleSessionTimeoutMs: settings.idleSessionTimeoutMs ?? defaultConfig.idleSessionTimeoutMs,
    maxConnections: settings.maxConnections ?? defaultConfig.maxConnections,
  };
}

/**
 * The OpenAPI 3.1 document of the Connect JSON surface, generated from the protos by
 * tools/protoc-gen-openapi.ts (buf.gen.yaml); beside this module's folder in the sources
 * and in dist/ alike.
 */
export const OPENAPI_FILE = new URL("../gen/openapi/openapi.json", import.meta.url);

/**
 * Serves `GET /livez` and `GET /readyz` (transport/probes.ts), `GET /metrics`
 * (Prometheus text), `GET /openapi.json` and, with `inspectorDir`, the inspector page
 * (`GET /`, server/transport/static-files.ts) beside the RPCs; anything else is 404.
 * With `credentials` (no `METRICS_PORT`), `/metrics` asks for a bearer token of the
 * `metrics` role when auth is on (401 without one, 403 for another role's); without
 * them, `/metrics` is served on its own port only, and is 404 here.
 */
export function pagesFallback(
  telemetry: Telemetry,
  readiness: Readiness,
  inspectorDir: string | undefined,
  openApi: Buffer,
  credentials: Credentials | undefined,
): NonNullable<ConnectNodeAdapterOptions["fallback"]> {
  const page = inspectorDir === undefined ? undefined : staticFiles(inspectorDir);
  const probe = probes(() => readiness.check());
  return (req, res) => {
    if (probe(req, res)) return;
    if (req.method === "GET" && req.url === "/openapi.json") {
      res.writeHead(200, { "content-type": "application/json", "content-length": openApi.length });
      res.end(openApi);
      return;
    }
    if (credentials !== undefined && req.method === "GET" && req.url === "/metrics") {
      void holdsRole(credentials, req.headers.authorization, "metrics").then((allowed) => {
        if (!allowed) {
          res.writeHead(401, {
            "content-type": "text/plain",
            "www-authenticate": 'Bearer realm="metrics"',
          });
          res.end("a bearer token of the metrics role is required\n");
          return;
        }
        serveMetrics(telemetry, res);
      });
      return;
    }
    if (page?.(req, res)) return;
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  };
}

/** Writes the registry's metrics as Prometheus text. */
function serveMetrics(
  telemetry: Telemetry,
  res: Pick<ServerResponse, "writeHead" | "end"> | Pick<Http2ServerResponse, "writeHead" | "end">,
): void {
  void telemetry.registry.metrics().then((text) => {
    res.writeHead(200, { "content-type": telemetry.registry.contentType });
    res.end(text);
  });
}

/**
 * `GET /metrics` on a port of its own (`METRICS_PORT`), plain HTTP/1.1 without a token:
 * for a scraper inside the network, the port kept from the outside by the network.
 */
export async function listenMetrics(
  telemetry: Telemetry,
  host: string,
  port: number,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/metrics") return serveMetrics(telemetry, res);
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
