import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { startHaproxy } from "../support/haproxy.js";
import {
  eventually,
  grpcClients,
  putSession,
  sharedRedisUrl,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { ids } from "../support/lists.js";
import { offerOne } from "../support/suggest.js";

test("behind HAProxy: a watch with heartbeats outlives an idle spell of twice the proxy's idle timeout and sees the next offer", async () => {
  // Longer than the heartbeat period (5 s, the shortest allowed) and the clock's second of slack.
  const idleTimeoutMs = 8_000;
  const service = await spawnService(sharedRedisUrl(), {
    SHUTDOWN_GRACE_MS: "2000",
    LOG_LEVEL: "silent",
  });
  const proxy = await startHaproxy({ backends: [service.url], idleTimeoutMs });
  try {
    const sessionId = uniqueId();
    await putSession(grpcClients(service.url), { sessionId });
    const client = createClient(SuggestionService, createGrpcTransport({ baseUrl: proxy.url }));
    // The proxy's first health check puts the instance in its rotation.
    await eventually(
      () =>
        client.listSuggestions({ sessionId }).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    const seen: { heartbeat: boolean; open: string[] }[] = [];
    let offered = "";
    const ending = (async () => {
      try {
        for await (const m of client.watchSuggestions({ sessionId, heartbeatSeconds: 5 })) {
          seen.push({ heartbeat: m.heartbeat, open: ids(m.open) });
          if (seen.length === 1) {
            // The idle spell: twice the proxy's idle timeout, with nothing to say.
            setTimeout(
              () => {
                void offerOne(grpcClients(service.url), sessionId, "A").then((s) => {
                  offered = s.id;
                });
              },
              2 * idleTimeoutMs + 500,
            );
          }
          if (m.open.length > 0) break;
        }
        return "OK";
      } catch (err) {
        const e = ConnectError.from(err);
        return `${Code[e.code]}: ${e.rawMessage}`;
      }
    })();
    expect(await ending).toBe("OK");
    expect(seen.at(-1)).toEqual({ heartbeat: false, open: [offered] });
    expect(seen.slice(1, -1).every((m) => m.heartbeat)).toBe(true);
  } finally {
    await service.kill();
    await proxy.stop();
  }
});

test("behind HAProxy: a SIGTERM'd instance ends its watch UNAVAILABLE saying why, not OK", async () => {
  const service = await spawnService(sharedRedisUrl(), {
    SHUTDOWN_GRACE_MS: "2000",
    LOG_LEVEL: "silent",
  });
  const proxy = await startHaproxy({ backends: [service.url], idleTimeoutMs: 8_000 });
  try {
    const sessionId = uniqueId();
    const client = createClient(SuggestionService, createGrpcTransport({ baseUrl: proxy.url }));
    await eventually(
      () =>
        client.listSuggestions({ sessionId }).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    const ending = (async () => {
      try {
        for await (const _m of client.watchSuggestions({ sessionId, heartbeatSeconds: 5 })) {
          service.child.kill("SIGTERM");
        }
        return "OK";
      } catch (err) {
        const e = ConnectError.from(err);
        return `${Code[e.code]}: ${e.rawMessage}`;
      }
    })();
    expect(await ending).toBe("Unavailable: the server is shutting down");
    expect(await service.exited).toBe(0);
  } finally {
    await service.kill();
    await proxy.stop();
  }
});
