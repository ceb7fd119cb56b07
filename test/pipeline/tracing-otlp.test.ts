import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import {
  grpcClients,
  type ServiceProcess,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";

// The service as `npm start` runs it, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a
// collector stand-in that keeps every OTLP/HTTP request body it receives.
const posts: { path: string; type: string; body: Buffer }[] = [];
let collector: Server;
let service: ServiceProcess & { output: () => string };
beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      posts.push({
        path: req.url ?? "",
        type: req.headers["content-type"] ?? "",
        body: Buffer.concat(chunks),
      });
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  const { port } = collector.address() as AddressInfo;
  service = await spawnService(sharedRedisUrl(), {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_BSP_SCHEDULE_DELAY: "50",
    OTEL_SERVICE_NAME: "suggest-task-under-test",
  });
});
afterAll(async () => {
  await service?.kill("SIGTERM");
  await new Promise((resolve) => collector.close(resolve));
});

test("with OTEL_EXPORTER_OTLP_ENDPOINT set, a call's span reaches the collector in the caller's trace", async () => {
  expect(service.output()).toContain("traces to the OTLP endpoint");
  const traceId = randomBytes(16);
  const traceparent = `00-${traceId.toString("hex")}-${randomBytes(8).toString("hex")}-01`;
  const clients = grpcClients(service.url);
  await clients.suggestions.listSuggestions(
    { sessionId: uniqueId() },
    { headers: { traceparent } },
  );
  await vi.waitFor(
    () => {
      const post = posts.find((p) => p.body.includes(traceId));
      expect(post?.path).toBe("/v1/traces");
      expect(post?.type).toBe("application/x-protobuf");
      expect(post?.body.includes("oda.suggest.v1.SuggestionService/ListSuggestions")).toBe(true);
      expect(post?.body.includes("suggest-task-under-test")).toBe(true);
    },
    { timeout: 10_000, interval: 100 },
  );
});
