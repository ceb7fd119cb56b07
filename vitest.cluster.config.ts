import { defineConfig } from "vitest/config";

/**
 * `npm run test:cluster`: the suites of the tools, the lists, settlements, report-back and
 * Start, run unchanged against a 3-primary Redis Cluster (test/support/global-setup-cluster.ts),
 * plus the tests that only make sense there (test/cluster/). Suites that need one Redis
 * of their own (they kill it, or count its commands) keep it and run in `npm test` only.
 */
export default defineConfig({
  test: {
    globals: false,
    include: [
      "test/cluster/**/*.test.ts",
      "test/rpc/suggest-task-rules.test.ts",
      "test/rpc/suggest-task-precedence.test.ts",
      "test/rpc/suggest-task-concurrency.test.ts",
      "test/rpc/list.test.ts",
      "test/store/list-read.test.ts",
      "test/store/lua-suggestions.test.ts",
      "test/store/lists-cache.test.ts",
      "test/store/lua-locks-host.test.ts",
      "test/store/lua-inbox-withdraw.test.ts",
      "test/store/lua-inbox-index.test.ts",
      "test/rpc/settle.test.ts",
      "test/rpc/withdraw.test.ts",
      "test/rpc/withdraw-rules.test.ts",
      "test/rpc/settlements.test.ts",
      "test/store/settlements-read.test.ts",
      "test/store/legacy-log.test.ts",
      "test/rpc/watch.test.ts",
      "test/rpc/workspace-list.test.ts",
      "test/rpc/workspace-watch.test.ts",
      "test/rpc/start.test.ts",
      "test/rpc/start-failures.test.ts",
      "test/store/start-lock.test.ts",
      "test/rpc/start-settings.test.ts",
      "test/rpc/start-stall.test.ts",
      "test/e2e/start-crash.test.ts",
      "test/host/host.test.ts",
      "test/rpc/delete-suggestions.test.ts",
      "test/rpc/delete-suggestions-race.test.ts",
      "test/store/retention.test.ts",
    ],
    globalSetup: ["test/support/global-setup-cluster.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
