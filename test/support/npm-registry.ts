import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../../server/redis/redis-server-process.js";
import { spawnWithOutput } from "./child-output.js";
import { ROOT } from "./sdk-consumer.js";

/** A local npm registry (verdaccio) of a test's own, with a user allowed to publish. */
export interface NpmRegistry {
  /** The registry's URL, without a trailing slash: `http://127.0.0.1:<port>`. */
  readonly url: string;
  /**
   * An npm user config (a file of the test's folder, never the user's `~/.npmrc`) that holds
   * the publishing user's token for this registry; pass it as `--userconfig`.
   */
  readonly userconfig: string;
  /** What verdaccio printed, for a failure's message. */
  output(): string;
  /** Stops the registry and waits for its exit. */
  stop(): Promise<void>;
}

/**
 * Starts verdaccio on a free loopback port with a config written into `dir`: its storage
 * and user file there, no uplinks (it serves only what is published to it, so a scoped
 * install proves the package came from here), anyone may read, an authenticated user may
 * publish. Then registers a user through the registry's own `PUT /-/user/org.couchdb.user:`
 * endpoint (what `npm adduser` calls) and writes the token it answers into a user config.
 */
export async function startNpmRegistry(dir: string): Promise<NpmRegistry> {
  mkdirSync(join(dir, "storage"), { recursive: true });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    [
      `storage: ${JSON.stringify(join(dir, "storage"))}`,
      "auth:",
      "  htpasswd:",
      `    file: ${JSON.stringify(join(dir, "htpasswd"))}`,
      "    max_users: 1",
      "uplinks: {}",
      "packages:",
      "  '**':",
      "    access: $all",
      "    publish: $authenticated",
      "    unpublish: $authenticated",
      "web:",
      "  enable: false",
      "listen:",
      `  - 127.0.0.1:${port}`,
      "log: { type: stdout, format: json, level: warn }",
      "",
    ].join("\n"),
  );
  const bin = join(ROOT, "node_modules/verdaccio/bin/verdaccio");
  const { child, output, exited } = spawnWithOutput(process.execPath, [bin, "--config", config], {
    cwd: dir,
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  try {
    await untilPing(url, child);
    const token = await addUser(url, "publisher", `pw-${port}-${process.pid}`);
    const userconfig = join(dir, "npmrc");
    // The token for this registry only; `registry` and the @oda scope point here too, so a
    // publish cannot go anywhere else whatever the machine's own npm config says.
    writeFileSync(
      userconfig,
      [
        `registry=${url}/`,
        `@oda:registry=${url}/`,
        `//127.0.0.1:${port}/:_authToken=${token}`,
        "",
      ].join("\n"),
    );
    return { url, userconfig, output, stop };
  } catch (err) {
    await stop();
    throw new Error(`verdaccio did not come up: ${(err as Error).message}\n${output()}`);
  }
}

/** Waits (up to 30 s) for the registry to answer `GET /-/ping`, failing at once if it exits. */
async function untilPing(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`verdaccio exited (${child.exitCode ?? child.signalCode})`);
    }
    const ok = await fetch(`${url}/-/ping`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("no answer to /-/ping within 30 s");
}

/** Registers a user as `npm adduser` does and answers the token the registry gives it. */
async function addUser(url: string, name: string, password: string): Promise<string> {
  const res = await fetch(`${url}/-/user/org.couchdb.user:${name}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, password }),
  });
  const body = (await res.json()) as { token?: string; error?: string };
  if (res.status !== 201 || typeof body.token !== "string") {
    throw new Error(`adding user ${name}: ${res.status} ${JSON.stringify(body)}`);
  }
  return body.token;
}
