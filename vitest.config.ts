import { defineConfig } from "vitest/config";

/**
 * Files that start the service as a user does (`npm start`, which builds dist/), kill
 * processes, sit behind a proxy, or measure time closely run one at a time, after the
 * rest; the rest run two at a time, each worker with a redis-server of its own
 * (test/support/global-setup.ts), so no file counts another's keys or commands.
 */
const oneAtATime = [
  "test/e2e/**/*.test.ts",
  "test/pipeline/tracing-otlp.test.ts",
  "test/pipeline/deadlines.test.ts",
  "test/redis/private-redis.test.ts",
  "test/redis/unix-socket.test.ts",
  "test/rpc/watch-heartbeat.test.ts",
  "test/rpc/start-stall.test.ts",
];

/**
 * Files whose subject does not change with the Node release that drives them: the deploy
 * files, the image (its Node is the image's own), the examples' scripts, the SDK's
 * tarball and its publishing through a registry, the docs' snippets type-checked, the
 * long soak. They run one at a time, last, in a project of their own, which
 * CI runs on one Node release only (.ci/run names the projects each release runs).
 */
const anyNode = [
  "test/deploy/**/*.test.ts",
  "test/e2e/image.test.ts",
  "test/e2e/sdk-publish.test.ts",
  "test/e2e/examples-prereqs.test.ts",
  "test/e2e/socket-soak.test.ts",
  "test/sdk/snippets.test.ts",
  "test/sdk/sdk-package.test.ts",
];

/**
 * Drills of the Redis deployment itself (Sentinel failovers, a promoted evicting replica,
 * TLS to Redis with a CA of its own, a primary swapped behind its address): their subject
 * is the store's topology and the Redis client, not the Node release. They run one at a
 * time, last, in a project of their own, which CI runs on the Node release that runs on
 * Redis and on the one that runs on Valkey (.ci/run).
 */
const storeDrills = [
  "test/e2e/sentinel-failover.test.ts",
  "test/e2e/sentinel-eviction.test.ts",
  "test/e2e/redis-tls.test.ts",
  "test/e2e/redis-swap.test.ts",
];

export default defineConfig({
  test: {
    globals: false,
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    projects: [
      {
        extends: true,
        test: {
          name: "side-by-side",
          include: ["test/**/*.test.ts"],
          // Tests that need a Redis Cluster run in `npm run test:cluster` (vitest.cluster.config.ts).
          exclude: ["test/cluster/**", ...oneAtATime, ...anyNode, ...storeDrills],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "one-at-a-time",
          include: oneAtATime,
          exclude: [...anyNode, ...storeDrills],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: "store-drills",
          include: storeDrills,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: "any-node",
          include: anyNode,
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
