import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import type * as grpc from "@grpc/grpc-js";
import { expect, test } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { grpcJsClients, grpcJsStream, loadHealth } from "../support/grpc-js.js";
import {
  grpcClients,
  putSession,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";

/** How a stream ended, as its client reports it: the code's name and the message. */
type Ending = { readonly name: string; readonly code: string; readonly message: string };

/** Reads a connect-es stream to its end; `statuses` collects health statuses on the way. */
async function connectEnding(
  name: string,
  stream: AsyncIterable<unknown>,
  seen: unknown[] = [],
): Promise<Ending> {
  try {
    for await (const m of stream) seen.push(m);
    return { name, code: "OK", message: "" };
  } catch (err) {
    const e = ConnectError.from(err);
    return { name, code: Code[e.code], message: e.rawMessage };
  }
}

/** Reads a grpc-js stream to its end. */
function grpcJsEnding(
  name: string,
  stream: grpc.ClientReadableStream<unknown>,
  seen: unknown[] = [],
): Promise<Ending> {
  return new Promise((resolve) => {
    stream.on("data", (m) => seen.push(m));
    stream.on("error", (err: grpc.ServiceError) =>
      resolve({ name, code: codeName(err.code), message: err.details }),
    );
    stream.on("end", () => resolve({ name, code: "OK", message: "" }));
  });
}

function codeName(code: number): string {
  return Code[code] ?? String(code);
}

test("SIGTERM ends every watch UNAVAILABLE saying why, never OK: both watches and health Watch, through grpc-js and connect-es, fast path and connect-node; it exits 0", async () => {
  const service = await spawnService(sharedRedisUrl(), {
    SHUTDOWN_DELAY_MS: "500",
    SHUTDOWN_GRACE_MS: "3000",
    LOG_LEVEL: "silent",
  });
  const sessionId = uniqueId();
  const workspaceId = uniqueId("ws");
  await putSession(grpcClients(service.url), { sessionId, workspaceId });

  const grpcJs = grpcJsClients(service.url);
  const grpcJsHealth = loadHealth(service.url);
  const viaGrpc = createGrpcTransport({ baseUrl: service.url });
  const viaConnect = createConnectTransport({ baseUrl: service.url, httpVersion: "1.1" });
  const viaConnectH2 = createConnectTransport({ baseUrl: service.url, httpVersion: "2" });
  const viaGrpcWeb = createGrpcWebTransport({ baseUrl: service.url, httpVersion: "2" });
  const first: unknown[][] = [];
  const seen = () => {
    const messages: unknown[] = [];
    first.push(messages);
    return messages;
  };
  const healthSeen: unknown[][] = [seen(), seen(), seen()];
  const endings = [
    grpcJsEnding(
      "grpc-js WatchSuggestions",
      grpcJsStream(grpcJs.suggestions, "WatchSuggestions", { session_id: sessionId }),
      seen(),
    ),
    grpcJsEnding(
      "grpc-js WatchWorkspaceSuggestions",
      grpcJsStream(grpcJs.suggestions, "WatchWorkspaceSuggestions", {
        workspace_id: workspaceId,
        heartbeat_seconds: 5,
      }),
      seen(),
    ),
    grpcJsEnding(
      "grpc-js Health/Watch",
      grpcJsStream(grpcJsHealth, "Watch", { service: "" }),
      healthSeen[0],
    ),
    ...[
      ["connect-es gRPC (fast path)", viaGrpc],
      ["connect-es Connect over HTTP/1.1", viaConnect],
      ["connect-es gRPC-Web over HTTP/2", viaGrpcWeb],
    ].flatMap(([name, transport]) => {
      const client = createClient(SuggestionService, transport as typeof viaGrpc);
      return [
        connectEnding(`${name} WatchSuggestions`, client.watchSuggestions({ sessionId }), seen()),
        connectEnding(
          `${name} WatchWorkspaceSuggestions`,
          client.watchWorkspaceSuggestions({ workspaceId }),
          seen(),
        ),
      ];
    }),
    connectEnding(
      "connect-es gRPC Health/Watch (fast path)",
      createClient(Health, viaGrpc).watch({ service: "oda.suggest.v1.SuggestionService" }),
      healthSeen[1],
    ),
    connectEnding(
      "connect-es Connect over HTTP/2 Health/Watch (connect-node)",
      createClient(Health, viaConnectH2).watch({ service: "" }),
      healthSeen[2],
    ),
  ];
  // Every stream has its first message before the signal.
  const until = Date.now() + 15_000;
  while (first.some((m) => m.length === 0) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(first.map((m) => m.length > 0)).toEqual(first.map(() => true));

  service.child.kill("SIGTERM");
  const ended = await Promise.all(endings);
  expect(await service.exited).toBe(0);
  for (const ending of ended) {
    expect(ending).toEqual({
      name: ending.name,
      code: "Unavailable",
      message: "the server is shutting down",
    });
  }
  // Health watchers heard NOT_SERVING (readiness turns at once) before their stream ended.
  for (const statuses of healthSeen) {
    const last = statuses.at(-1) as { status: unknown };
    expect([1, "SERVING"]).toContain((statuses[0] as { status: unknown }).status);
    expect([2, "NOT_SERVING"]).toContain(last.status);
  }
  grpcJs.close();
  grpcJsHealth.close();
});
