import { cors } from "@connectrpc/connect";
import type { DualHandler } from "./handler-types.js";

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE_S = 7_200;

/**
 * CORS for browsers on other origins (`CORS_ALLOWED_ORIGINS`), with connect-es's lists of
 * the headers the Connect and gRPC-Web protocols send and read (`cors` of
 * `@connectrpc/connect`), plus `Authorization` for a bearer token and `exposed`, the
 * headers the service adds to every answer:
 * - a preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin
 *   is answered 204 with the allowed methods and headers; from any other origin 403,
 *   with no CORS header, so the browser does not send the call;
 * - a call from an allowed origin is answered with `Access-Control-Allow-Origin` set to
 *   that origin (and `Vary: Origin`); from another, without it, so the browser keeps the
 *   answer from the page.
 * `*` among the origins allows every origin. Requests without `Origin` (every client
 * that is not a browser) pass untouched. Pinned by test/e2e/cors-browser.test.ts.
 */
export function withCors(
  handler: DualHandler,
  allowedOrigins: readonly string[],
  exposed: readonly string[] = [],
): DualHandler {
  const any = allowedOrigins.includes("*");
  const origins = new Set(allowedOrigins);
  const allowMethods = cors.allowedMethods.join(", ");
  const allowHeaders = [...cors.allowedHeaders, "Authorization"].join(", ");
  const exposeHeaders = [...cors.exposedHeaders, ...exposed].join(", ");
  return (req, res) => {
    const origin = req.headers.origin;
    if (origin === undefined) return handler(req, res);
    const allowed = any || origins.has(origin);
    const preflight =
      req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
    if (preflight) {
      if (!allowed) {
        res.writeHead(403, { vary: "Origin" });
        res.end();
        return;
      }
      res.writeHead(204, {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": allowMethods,
        "access-control-allow-headers": allowHeaders,
        "access-control-max-age": String(PREFLIGHT_MAX_AGE_S),
        vary: "Origin",
      });
      res.end();
      return;
    }
    res.setHeader("vary", "Origin");
    if (allowed) {
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("access-control-expose-headers", exposeHeaders);
    }
    handler(req, res);
  };
}
