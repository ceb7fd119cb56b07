import { Writable } from "node:stream";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { callRefusals } from "../../server/pipeline/call-refusals.js";
import { createTelemetry } from "../../server/pipeline/telemetry.js";
import type { SuggestServer } from "../../server/server.js";
import {
  type Clients,
  grpcClients,
  ownRedis,
  putSession,
  sharedRedisUrl,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { startTestRedis } from "../support/store-server.js";
import { offer } from "../support/suggest.js";

describe("one JSON log line per call, and Prometheus metrics", () => {
  const lines: Record<string, unknown>[] = [];
  let server: SuggestServer;
  let clients: Clients;
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    server = await startTestServer(sharedRedisUrl(), { logger: pino({ level: "info" }, sink) });
    clients = grpcClients(server.url);
  });
  afterAll(() => server.close());

  test("method, code, duration and session id; never the brief's text", async () => {
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    const secret = "TOP-SECRET-BRIEF-TEXT";
    await offer(clients, { sessionId, turnId: "t1", brief: secret, title: "Visible title?" });
    await offer(clients, { sessionId, turnId: "t1" }).catch(() => undefined);
    const calls = lines.filter((l) => l.sessionId === sessionId);
    expect(calls.map((l) => [l.method, l.code])).toEqual([
      ["/oda.suggest.v1.LocalHostService/PutSession", "ok"],
      ["/oda.suggest.v1.SuggestionService/SuggestTask", "ok"],
      ["/oda.suggest.v1.SuggestionService/SuggestTask", "resource_exhausted"],
    ]);
    for (const line of calls) {
      expect(line.msg).toBe("call");
      expect(typeof line.durationMs).toBe("number");
    }
    expect(calls[2]?.refusal).toBe("TURN_LIMIT");
    const all = JSON.stringify(lines);
    expect(all).not.toContain(secret);
    expect(all).not.toContain("Visible title?");
  });

  test("GET /metrics counts calls by method and code, refusals by reason, latency", async () => {
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    await offer(clients, { sessionId, turnId: "t" });
    await offer(clients, { sessionId, turnId: "t" }).catch(() => undefined);
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(
      /suggest_calls_total\{method="\/oda.suggest.v1.SuggestionService\/SuggestTask",code="ok"\} [1-9]/,
    );
    expect(text).toMatch(/suggest_refusals_total\{reason="TURN_LIMIT"\} [1-9]/);
    expect(text).toContain("suggest_call_duration_seconds_bucket");
    expect(text).toMatch(/suggest_starts_in_flight 0/);
    expect(text).toContain("suggest_redis_errors_total");
  });
});

describe("grpc.health.v1 reports SERVING only while Redis answers", () => {
  test("Check and Watch follow Redis down and up", async () => {
    const redis = await ownRedis();
    const server = await startTestServer(redis.url);
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    try {
      expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      expect((await health.check({ service: "oda.suggest.v1.SuggestionService" })).status).toBe(
        HealthCheckResponse_ServingStatus.SERVING,
      );
      const unknown = await health.check({ service: "no.Such" }).catch((e: unknown) => e);
      expect(ConnectError.from(unknown).code).toBe(Code.NotFound);

      const abort = new AbortController();
      const seen: HealthCheckResponse_ServingStatus[] = [];
      const watching = (async () => {
        try {
          for await (const r of health.watch({}, { signal: abort.signal })) seen.push(r.status);
        } catch {}
      })();
      await expect.poll(() => seen).toEqual([HealthCheckResponse_ServingStatus.SERVING]);
      await redis.kill();
      expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);
      await expect.poll(() => seen.at(-1)).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);
      const again = await startTestRedis({ dir: redis.dir, port: redis.port });
      await expect
        .poll(() => seen.at(-1), { timeout: 10_000 })
        .toBe(HealthCheckResponse_ServingStatus.SERVING);
      expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      abort.abort();
      await watching;
      await server.close();
      await again.stop();
    } finally {
      redis.remove();
    }
  });
});

describe("a call its transport refused before the handler ran", () => {
  test("is logged and counted with its RPC and code, once per hook, and no latency", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    const telemetry = createTelemetry(pino({ level: "info" }, sink));
    const refuse = callRefusals({
      hooks: [telemetry.hook],
      defaultDeadlineMs: 1,
      maxDeadlineMs: 1,
    });
    const method = SuggestionService.method.suggestTask;
    refuse(method, new ConnectError("parse binary: premature EOF", Code.InvalidArgument));
    refuse(method, new ConnectError("the operation timed out", Code.DeadlineExceeded));
    const procedure = "/oda.suggest.v1.SuggestionService/SuggestTask";
    expect(lines.map((l) => [l.msg, l.method, l.code])).toEqual([
      ["call", procedure, "invalid_argument"],
      ["call", procedure, "deadline_exceeded"],
    ]);
    const calls = await telemetry.registry.getSingleMetric("suggest_calls_total")?.get();
    expect(calls?.values.map((v) => [v.labels.method, v.labels.code, v.value])).toEqual([
      [procedure, "invalid_argument", 1],
      [procedure, "deadline_exceeded", 1],
    ]);
    const latency = await telemetry.registry.getSingleMetricAsString(
      "suggest_call_duration_seconds",
    );
    expect(latency).not.toContain("suggest_call_duration_seconds_count");
    expect(await telemetry.registry.getSingleMetricAsString("suggest_starts_in_flight")).toMatch(
      / 0$/,
    );
  });
});
