import { defineConfig } from "vitest/config";

/**
 * `npm run test:cluster`: the suites of the tool, the lists, settlements and Start, run
 * unchanged against a 3-primary Redis Cluster (test/support/global-setup-cluster.ts),
 * plus the tests that only make sense there (test/cluster/). Suites that need one Redis
 * of their own (they kill it, or count its commands) keep it and run in `npm test` only.
 */
export default defineConfig({
  test: {
    globals: false,
    include: [
      "test/cluster/**/*.test.ts",
      "test/suggest-task-rules.test.ts",
      "test/suggest-task-concurrency.test.ts",
      "test/list.test.ts",
      "test/list-read.test.ts",
      "test/settle.test.ts",
      "test/watch.test.ts",
      "test/start.test.ts",
      "test/start-lock.test.ts",
      "test/start-settings.test.ts",
      "test/start-stall.test.ts",
      "test/start-crash.test.ts",
      "test/host.test.ts",
    ],
    globalSetup: ["test/support/global-setup-cluster.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
