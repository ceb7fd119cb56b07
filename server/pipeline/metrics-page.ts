import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { type Credentials, holdsRole } from "./auth.js";
import type { Telemetry } from "./telemetry.js";

/** The parts of an HTTP/1.1 or HTTP/2 answer a page writes. */
export type PageResponse =
  | Pick<ServerResponse, "writeHead" | "end">
  | Pick<Http2ServerResponse, "writeHead" | "end">;

/**
 * What writes the registry's metrics as Prometheus text: `GET /metrics` on either port,
 * the service's own (`metricsPage`) or `METRICS_PORT`.
 */
export function serveMetrics(telemetry: Telemetry): (res: PageResponse) => void {
  return (res) => {
    void telemetry.registry.metrics().then((text) => {
      res.writeHead(200, { "content-type": telemetry.registry.contentType });
      res.end(text);
    });
  };
}

/**
 * `GET /metrics` beside the RPCs (no `METRICS_PORT`): it asks for a bearer token of the
 * `metrics` role when auth is on (401 without one or with another role's), since the
 * service's port is reachable from outside. Answers whether the request was this page's.
 */
export function metricsPage(
  telemetry: Telemetry,
  credentials: Credentials,
): (req: IncomingMessage | Http2ServerRequest, res: PageResponse) => boolean {
  const serve = serveMetrics(telemetry);
  return (req, res) => {
    if (req.method !== "GET" || req.url !== "/metrics") return false;
    void holdsRole(credentials, req.headers.authorization, "metrics").then((allowed) => {
      if (!allowed) {
        res.writeHead(401, {
          "content-type": "text/plain",
          "www-authenticate": 'Bearer realm="metrics"',
        });
        res.end("a bearer token of the metrics role is required\n");
        return;
      }
      serve(res);
    });
    return true;
  };
}
