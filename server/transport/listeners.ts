import { readFile } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import type { ClientLimits } from "./connection-guard.js";
import type { DualHandler, StreamHandler } from "./handler-types.js";
import { createOnePortServer, createTlsOnePortServer, type OnePortServer } from "./one-port.js";
import { probes } from "./probes.js";
import { staticFiles } from "./static-files.js";

type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;

/**
 * Listens on `address`; resolves the port. Accepting can fail later (EMFILE when the
 * process is out of file descriptors): the server goes on listening, since an unhandled
 * 'error' would end the process, and `acceptFailed` is told every 5 s at most.
 */
export async function listen(
  server: OnePortServer,
  address: { readonly port: number; readonly host: string },
  acceptFailed: (err: Error) => void,
): Promise<number> {
  const { tcp } = server;
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(address.port, address.host, () => resolve());
  });
  let acceptWarnedAt = 0;
  tcp.on("error", (err) => {
    if (Date.now() - acceptWarnedAt < 5_000) return;
    acceptWarnedAt = Date.now();
    acceptFailed(err);
  });
  return (tcp.address() as AddressInfo).port;
}

/** HTTP/2 settings sized for many concurrent streams (watchers) per connection. */
const H2_SETTINGS = { maxConcurrentStreams: 1000 };

/** The files of TLS_CERT_FILE, TLS_KEY_FILE and TLS_CLIENT_CA_FILE, those configured. */
export interface TlsFiles {
  readonly tlsCertFile?: string | undefined;
  readonly tlsKeyFile?: string | undefined;
  readonly tlsClientCaFile?: string | undefined;
}

/**
 * The listening server: TLS when a certificate and its key are given, else cleartext h2c
 * and HTTP/1.1; each client held to `limits` (transport/connection-guard.ts).
 */
export async function listener(
  settings: TlsFiles,
  handler: DualHandler,
  fastPath: StreamHandler | undefined,
  limits: ClientLimits,
): Promise<OnePortServer> {
  if (settings.tlsCertFile === undefined || settings.tlsKeyFile === undefined) {
    return createOnePortServer(
      handler,
      { settings: H2_SETTINGS, maxSessionMemory: 64 },
      fastPath,
      limits,
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
    limits,
  );
}

/**
 * The OpenAPI 3.1 document of the Connect JSON surface, generated from the protos by
 * tools/protoc-gen-openapi.ts (buf.gen.yaml); beside this module's folder in the sources
 * and in dist/ alike.
 */
export const OPENAPI_FILE = new URL("../../gen/openapi/openapi.json", import.meta.url);

/** A page beside the RPCs: answers a request it serves and returns true, else false. */
export type Page = (...args: Parameters<Fallback>) => boolean;

/**
 * Serves `GET /livez` and `GET /readyz` (transport/probes.ts, `notReady` their reason),
 * `GET /openapi.json`, `metrics` when given (`GET /metrics` with its token check, none
 * when `METRICS_PORT` gives it a port of its own), `mcp` when given (`POST /mcp`, the
 * MCP endpoint the wiring hands over) and, with `inspectorDir`, the inspector page
 * (`GET /`, server/transport/static-files.ts) beside the RPCs; anything else is 404.
 */
export function pagesFallback(
  notReady: () => Promise<string | undefined>,
  inspectorDir: string | undefined,
  openApi: Buffer,
  metrics: Page | undefined,
  mcp?: Page,
): Fallback {
  const page = inspectorDir === undefined ? undefined : staticFiles(inspectorDir);
  const probe = probes(notReady);
  return (req, res) => {
    if (probe(req, res)) return;
    if (mcp?.(req, res)) return;
    if (req.method === "GET" && req.url === "/openapi.json") {
      res.writeHead(200, { "content-type": "application/json", "content-length": openApi.length });
      res.end(openApi);
      return;
    }
    if (metrics?.(req, res)) return;
    if (page?.(req, res)) return;
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  };
}

/**
 * `GET /metrics` on a port of its own (`METRICS_PORT`), plain HTTP/1.1 without a token,
 * written by `serve`: for a scraper inside the network, the port kept from the outside
 * by the network.
 */
export async function listenMetrics(
  serve: (res: ServerResponse) => void,
  host: string,
  port: number,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/metrics") return serve(res);
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
