import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../../server/redis/redis-server-process.js";
import { spawnWithOutput } from "./child-output.js";
import { tempDir } from "./harness.js";

/** The message a test fails with when Prometheus's binaries are not installed. */
export const INSTALL_PROMETHEUS =
  "promtool and prometheus are needed: install the Debian package prometheus (apt-get install -y prometheus)";

/** Throws, saying how to install it, unless `binary` (promtool, prometheus) runs here. */
export function requireBinary(binary: "promtool" | "prometheus"): void {
  const run = spawnSync(binary, ["--version"], { encoding: "utf8" });
  if (run.error !== undefined || run.status !== 0) {
    throw new Error(
      `${binary} does not run (${run.error?.message ?? run.stderr}): ${INSTALL_PROMETHEUS}`,
    );
  }
}

/** Runs promtool with `args`; answers its exit status and output. */
export function promtool(args: readonly string[]): { status: number | null; output: string } {
  const run = spawnSync("promtool", args, { encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** A Prometheus server of a test's own. */
export interface PrometheusProcess {
  /** `http://127.0.0.1:port`. */
  readonly url: string;
  /** Answers `/api/v1/<path>` (GET with `params`) as JSON. */
  api(path: string, params?: Record<string, string>): Promise<PrometheusAnswer>;
  /** Its log so far. */
  output(): string;
  /** Stops it and removes its folder. */
  stop(): Promise<void>;
}

/** What the HTTP API answers: success with data, or error with a message. */
export interface PrometheusAnswer {
  readonly status: "success" | "error";
  readonly data?: unknown;
  readonly error?: string;
}

/**
 * Starts `prometheus` on a free loopback port with a folder and configuration of its
 * own: `rules` (absolute paths) loaded, each of `targets` (host:port) scraped every second
 * as job `job`. Resolves once `/-/ready` answers.
 */
export async function startPrometheus(options: {
  readonly job: string;
  readonly targets: readonly string[];
  readonly rules: readonly string[];
}): Promise<PrometheusProcess> {
  const { dir, remove } = tempDir("prometheus");
  const port = await freePort();
  const config = join(dir, "prometheus.yml");
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: "1s", evaluation_interval: "1s" },
      rule_files: options.rules,
      scrape_configs: [{ job_name: options.job, static_configs: [{ targets: options.targets }] }],
    }),
  );
  const { child, output, exited } = spawnWithOutput("prometheus", [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ]);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    remove();
  };
  const until = Date.now() + 20_000;
  for (;;) {
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (child.exitCode !== null || Date.now() > until) {
      await stop();
      throw new Error(`prometheus did not become ready:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    output,
    stop,
    async api(path, params = {}) {
      const res = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params)}`);
      return (await res.json()) as PrometheusAnswer;
    },
  };
}
