import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startRedisServer } from "../../server/redis/redis-server-process.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The URL of the redis-server this test run started for itself. */
    redisUrl: string;
  }
}

/**
 * Starts one redis-server of the suite's own, on a free port with its own data folder,
 * shared by tests that use distinct session ids. Tests that crash Redis start their own.
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-redis-"));
  const redis = await startRedisServer({ dir });
  project.provide("redisUrl", redis.url);
  return async () => {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
