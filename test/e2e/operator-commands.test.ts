import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { spawnService, tempDir } from "../support/harness.js";

/*
 * The operator commands of `main.js` (`--help` lists them): `rebuild-inbox` beside a
 * running service on its private Redis (REDIS_URL unset), which holds DATA_DIR.
 */

const run = promisify(execFile);

/** `server/main.ts <args>` with `env` over the environment, REDIS_URL unset. */
async function main(args: string[], env: Record<string, string> = {}) {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
  delete childEnv.REDIS_URL;
  return run(process.execPath, ["--import", "tsx", "server/main.ts", ...args], {
    env: childEnv,
    encoding: "utf8",
  }).then(
    ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({
      code: err.code,
      out: err.stdout + err.stderr,
    }),
  );
}

describe("main.js's operator commands", () => {
  const data = tempDir("operator-commands");
  afterAll(() => data.remove());

  test("--help lists the commands and starts nothing", async () => {
    const { code, out } = await main(["--help"], { DATA_DIR: data.dir, PORT: "0" });
    expect(code).toBe(0);
    expect(out).toContain("usage: node dist/server/main.js [command]");
    expect(out).toMatch(/^ {2}rebuild-inbox {2}recreates every workspace inbox's index/m);
    expect(out).not.toContain("listening on");
  });

  test("an unknown command is refused, naming it", async () => {
    const { code, out } = await main(["rebuild"], { DATA_DIR: data.dir });
    expect(code).toBe(1);
    expect(out).toBe('suggest-task: unknown command "rebuild"; --help lists them\n');
  });

  test("rebuild-inbox runs beside the service on its private Redis", async () => {
    const service = await spawnService(undefined, { DATA_DIR: data.dir });
    try {
      const { code, out } = await main(["rebuild-inbox"], { DATA_DIR: data.dir });
      expect(out).toMatch(/^rebuilt the inbox of \d+ chat\(s\) from \d+ log\(s\)\n$/);
      expect(code).toBe(0);
      // The service and its Redis go on.
      expect((await fetch(`${service.url}/metrics`)).status).toBe(200);
    } finally {
      await service.kill("SIGTERM");
    }
    // With the service gone, the command starts the private Redis itself.
    const alone = await main(["rebuild-inbox"], { DATA_DIR: data.dir });
    expect(alone.out).toMatch(/^rebuilt the inbox of \d+ chat\(s\) from \d+ log\(s\)\n$/);
    expect(alone.code).toBe(0);
  });
});
