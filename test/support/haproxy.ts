import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "../../server/redis/redis-server-process.js";
import { spawnWithOutput } from "./child-output.js";
import { tempDir } from "./harness.js";

/** Debian's `haproxy`, as tests run it (`.ci/run` installs it when missing). */
export const HAPROXY = "haproxy";

/** What a proxy in front of service instances is started with. */
export interface HaproxyOptions {
  /** The instances' base URLs (`http://127.0.0.1:port`), cleartext. */
  readonly backends: readonly string[];
  /** The proxy's idle timeout for a stream with nothing to say (client and server side), ms. */
  readonly idleTimeoutMs?: number;
  /** How often each backend's `GET /readyz` is checked, ms. */
  readonly checkIntervalMs?: number;
}

/** A running proxy. */
export interface Haproxy {
  /** `http://127.0.0.1:port`: h2c (gRPC, Connect over HTTP/2). */
  readonly url: string;
  /** The configuration it runs with (docs/operating.md shows the same). */
  readonly config: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The configuration the tests use: h2c in front, `proto h2` to every backend, a health
 * check of `GET /readyz` (an instance that drains or loses Redis leaves the rotation),
 * and short idle timeouts, so that an idle stream is cut as a cloud load balancer would.
 */
export function haproxyConfig(port: number, options: HaproxyOptions): string {
  const idle = options.idleTimeoutMs ?? 60_000;
  const inter = options.checkIntervalMs ?? 500;
  const servers = options.backends.map((url, i) => {
    const address = url.replace(/^https?:\/\//, "");
    return `  server s${i} ${address} proto h2 check check-proto h1 inter ${inter} fall 1 rise 1`;
  });
  return [
    "global",
    "  maxconn 4096",
    "defaults",
    "  mode http",
    "  timeout connect 2s",
    `  timeout client ${idle}ms`,
    `  timeout server ${idle}ms`,
    "  retries 3",
    "  option redispatch",
    "frontend front",
    `  bind 127.0.0.1:${port} proto h2`,
    "  default_backend services",
    "backend services",
    "  balance roundrobin",
    "  option httpchk GET /readyz",
    "  http-check expect status 200",
    ...servers,
    "",
  ].join("\n");
}

/**
 * Starts `haproxy -f <cfg> -db` on a free port, with a temp folder of its own, in front
 * of `options.backends`; resolves once it accepts connections.
 */
export async function startHaproxy(options: HaproxyOptions): Promise<Haproxy> {
  const port = await freePort();
  const { dir, remove } = tempDir("haproxy");
  const config = haproxyConfig(port, options);
  const file = join(dir, "haproxy.cfg");
  writeFileSync(file, config);
  const { child, output, exited } = spawnWithOutput(HAPROXY, ["-f", file, "-db"]);
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited:\n${output()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > until) throw new Error(`haproxy did not listen:\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    config,
    child,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
      remove();
    },
  };
}
