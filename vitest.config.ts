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
 * files, the image (its Node is the image's own), the examples' scripts, the SDK through
 * a registry, the long soak. They run one at a time, last, in a project of their own, which
 * CI runs on one Node release only (`--project side-by-side --project one-at-a-time` on
 * the others).
 */
const anyNode = [
  "test/deploy/**/*.test.ts",
  "test/e2e/image.test.ts",
  "test/e2e/sdk-publish.test.ts",
  "test/e2e/examples-prereqs.test.ts",
  "test/e2e/socket-soak.test.ts",
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
          exclude: ["test/cluster/**", ...oneAtATime, ...anyNode],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "one-at-a-time",
          include: oneAtATime,
          exclude: anyNode,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: "any-node",
          include: anyNode,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
