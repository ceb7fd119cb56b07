import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterEach, expect, test } from "vitest";
import { ChatSettingsSchema, Permission } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  connectErrorOf,
  grpcClients,
  ownRedis,
  putSession,
  spawnService,
  uniqueId,
} from "../support/harness.js";
import { useTestHost } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

// A Start while the service's Redis is out and its chat host is up: the answer names
// what failed, the suggestion store (the embedded host's chats live in the same Redis),
// never the chat host, and it comes well before a Redis command's 5 s timeout. The
// outage is a killed Redis (connections refused) or a Redis that vanished behind its
// address (connections accepted and never answered).
const testHost = useTestHost();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

test.each([
  ["killed", "a remote chat host"],
  ["killed", "the embedded chat host"],
  ["hanging", "a remote chat host"],
  ["hanging", "the embedded chat host"],
])(
  "a Start with Redis %s and %s: UNAVAILABLE naming the suggestion store, promptly",
  async (outage, host) => {
    const remote = host === "a remote chat host";
    const redis = await ownRedis();
    const proxy = await startTcpProxy(redis);
    const service = await spawnService(proxy.url, remote ? { CHAT_HOST_URL: testHost.url } : {});
    cleanups.push(async () => {
      await service.kill();
      await proxy.close();
      await redis.kill().catch(() => {});
      redis.remove();
    });
    const clients = grpcClients(service.url);
    const sessionId = uniqueId();
    await putSession(remote ? testHost.clients : clients, {
      sessionId,
      settings: create(ChatSettingsSchema, { permission: Permission.DEFAULT }),
    });
    const { id: suggestionId } = await offerOne(clients, sessionId, "Start me later");
    if (outage === "hanging") proxy.hold();
    await redis.kill();
    // The first Start may meet connections that look alive; the ones after it must not.
    for (const attempt of [1, 2, 3]) {
      const began = Date.now();
      const err = await connectErrorOf(
        clients.suggestions.startSuggestion({
          sessionId,
          suggestionId,
          options: { permission: Permission.READ_ONLY },
        }),
      );
      const tookMs = Date.now() - began;
      expect([err.code, err.rawMessage], `attempt ${attempt}`).toEqual([
        Code.Unavailable,
        "the suggestion store is unavailable",
      ]);
      expect(tookMs, `attempt ${attempt}`).toBeLessThan(attempt === 1 ? 4_000 : 1_000);
    }
    expect(service.child.exitCode).toBeNull();
  },
);
