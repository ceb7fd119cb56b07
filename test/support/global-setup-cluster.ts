import type { TestProject } from "vitest/node";
import { startRedisCluster } from "./redis-cluster.js";

/**
 * `npm run test:cluster`: starts one Redis Cluster of the suite's own (three primaries
 * on free ports, their own data folders) and gives its `redis+cluster://` URL to the
 * tests as the shared Redis, so that the suites run on it exactly as on one Redis.
 * Tests that kill nodes start a cluster of their own.
 */
export default async function setup(project: TestProject) {
  const cluster = await startRedisCluster();
  project.provide("redisUrl", cluster.url);
  return () => cluster.stop();
}
