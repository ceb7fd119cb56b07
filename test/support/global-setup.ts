import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startTestRedis } from "./store-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The URL of the redis-server this test run started for itself. */
    redisUrl: string;
    /**
     * One redis-server per worker of the project, when it runs files side by side: a
     * file's shared Redis is its worker's (`sharedRedisUrl`), so counts of keys or
     * commands never see another file's.
     */
    redisUrls?: string[];
  }
}

/**
 * Starts the redis-servers of the project's own, one per worker, each on a free port with
 * its own data folder, shared by the files of that worker, which use distinct session ids.
 * Tests that crash Redis start their own.
 */
export default async function setup(project: TestProject) {
  const workers = Math.max(1, Number(project.config.maxWorkers) || 1);
  const dirs = Array.from({ length: workers }, () =>
    mkdtempSync(join(tmpdir(), "suggest-task-redis-")),
  );
  const servers = await Promise.all(dirs.map((dir) => startTestRedis({ dir })));
  project.provide("redisUrl", (servers[0] as (typeof servers)[number]).url);
  project.provide(
    "redisUrls",
    servers.map((s) => s.url),
  );
  return async () => {
    await Promise.all(servers.map((s) => s.stop()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
}
