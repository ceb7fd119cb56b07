import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Response = Parameters<Fallback>[1];

/** The paths of the probes, on the service's own port. */
export const LIVEZ_PATH = "/livez";
export const READYZ_PATH = "/readyz";

/**
 * `GET /livez` and `GET /readyz`, as load balancers and Kubernetes probe an HTTP
 * service (HTTP/1.1 or HTTP/2, cleartext or TLS, no token: they sit beside the RPCs,
 * outside the call pipeline). `/livez` answers 200 whenever the event loop does, and
 * never asks Redis: a Redis outage must not restart every instance. `/readyz` answers
 * 200 `ready`, or 503 with a one-line reason (`notReady`: Redis does not answer, or a
 * drain has begun). Answers true when it took the request. Pinned by
 * test/e2e/probes.test.ts.
 */
export function probes(
  notReady: () => Promise<string | undefined>,
): (...args: Parameters<Fallback>) => boolean {
  return (req, res) => {
    if (req.method !== "GET") return false;
    const path = req.url?.split("?", 1)[0];
    if (path === LIVEZ_PATH) {
      answer(res, 200, "live");
      return true;
    }
    if (path !== READYZ_PATH) return false;
    notReady().then(
      (reason) =>
        reason === undefined ? answer(res, 200, "ready") : answer(res, 503, `not ready: ${reason}`),
      (err: unknown) => answer(res, 503, `not ready: ${String(err)}`),
    );
    return true;
  };
}

function answer(res: Response, status: number, line: string): void {
  if (res.headersSent || res.destroyed) return;
  const body = `${line}\n`;
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}
