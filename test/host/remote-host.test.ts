import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { startLockKey } from "../../server/store/keys.js";
import {
  connectErrorOf,
  grpcClients,
  ownRedis,
  putSession,
  redisClient,
  type ServiceProcess,
  spawnService,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { expectNotOpen, failureOf, logRecords } from "../support/lists.js";
import { useOwnRedis, useTestHost, useTestServer } from "../support/server-fixture.js";
import { keysOf, offerOne } from "../support/suggest.js";
import { startTestHost } from "../support/test-host.js";

// The remote host is a second process: the service's embedded host served over gRPC, on
// a Redis of its own, so its sessions and chats are reachable only through CHAT_HOST_URL.
const hostRedis = useOwnRedis();
let hostProcess: ServiceProcess;
let hostRedisClient: RedisClient;
beforeAll(async () => {
  hostProcess = await spawnService(hostRedis.url);
  hostRedisClient = redisClient(hostRedis.url);
});
afterAll(async () => {
  hostRedisClient.disconnect();
  await hostProcess.kill("SIGTERM");
});
const embedded = useTestServer();
const remote = useTestServer({ settings: () => ({ chatHostUrl: hostProcess.url }) });

/** The service to call, and the host that holds its sessions and chats. */
const setups = () =>
  ({
    embedded: { service: grpcClients(embedded.url), host: grpcClients(embedded.url) },
    remote: { service: grpcClients(remote.url), host: grpcClients(hostProcess.url) },
  }) as const;

describe.each(["embedded", "remote"] as const)("Start with the %s host", (which) => {
  test("creates one chat with one brief, answers it again, and refuses the brief as a goal", async () => {
    const { service, host } = setups()[which];
    const sessionId = uniqueId();
    await putSession(host, { sessionId, workspaceId: "ws-remote" });
    const offer = await offerOne(service, sessionId, "Same either way");
    const first = await service.suggestions.startSuggestion({
      sessionId,
      suggestionId: offer.id,
    });
    const again = await service.suggestions.startSuggestion({
      sessionId,
      suggestionId: offer.id,
    });
    expect(again.chatId).toBe(first.chatId);
    expect(first.suggestion).toMatchObject({
      state: SuggestionState.STARTED,
      chatId: first.chatId,
    });
    const { chat } = await host.local.getChat({ chatId: first.chatId });
    expect(chat).toMatchObject({
      workspaceId: "ws-remote",
      title: "Same either way",
      origin: { sessionId, suggestionId: offer.id },
    });
    expect(chat?.messages.map((m) => [m.author, m.text])).toEqual([
      [MessageAuthor.SUGGESTION, "Do the follow-up."],
    ]);
    const goal = await connectErrorOf(
      host.local.createGoal({
        chatId: first.chatId,
        messageId: chat?.messages[0]?.messageId ?? "",
      }),
    );
    expect(Code[goal.code]).toBe("PermissionDenied");
    // The chat lives in the host's Redis: with a remote host, none of it in the service's.
    const hostKeys = await keysOf(
      which === "remote" ? hostRedisClient : embedded.redis,
      first.chatId,
    );
    expect(hostKeys.length).toBeGreaterThan(0);
    if (which === "remote") expect(await keysOf(embedded.redis, first.chatId)).toEqual([]);
  });

  test("refuses a dismissed suggestion with not-open", async () => {
    const { service, host } = setups()[which];
    const sessionId = uniqueId();
    await putSession(host, { sessionId });
    const { id } = await offerOne(service, sessionId);
    await service.suggestions.dismissSuggestion({ sessionId, suggestionId: id });
    expectNotOpen(
      await failureOf(service.suggestions.startSuggestion({ sessionId, suggestionId: id })),
      id,
      SuggestionState.DISMISSED,
    );
  });
});

describe("a host that fails", () => {
  const testHost = useTestHost();
  const service = useTestServer({
    settings: () => ({ chatHostUrl: testHost.url, chatHostTimeoutMs: 500 }),
  });
  afterEach(() => {
    testHost.hooks.beforeCreateChat = undefined;
    testHost.hooks.beforePostMessage = undefined;
  });

  async function offered() {
    const sessionId = uniqueId();
    await putSession(testHost.clients, { sessionId });
    const { id } = await offerOne(service.clients, sessionId);
    return { sessionId, suggestionId: id };
  }

  /** Asserts UNAVAILABLE, no record beyond the offer, no lock left. */
  async function expectUnavailableNothingRecorded(sessionId: string, suggestionId: string) {
    const err = await connectErrorOf(
      service.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
    );
    expect(Code[err.code]).toBe("Unavailable");
    expect(err.rawMessage).toBe("the chat host is unavailable");
    expect((await logRecords(embedded.redis, sessionId)).map((r) => r.type)).toEqual([
      "offered",
      "starting",
    ]);
    expect(await embedded.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
  }

  test("CreateChat failing: UNAVAILABLE, nothing recorded, and a retry then succeeds", async () => {
    const { sessionId, suggestionId } = await offered();
    testHost.hooks.beforeCreateChat = async () => {
      throw new ConnectError("host restarting", Code.Unavailable);
    };
    await expectUnavailableNothingRecorded(sessionId, suggestionId);
    testHost.hooks.beforeCreateChat = undefined;
    const res = await service.clients.suggestions.startSuggestion({ sessionId, suggestionId });
    expect(res.suggestion?.state).toBe(SuggestionState.STARTED);
  });

  test("CreateChat hanging past the host deadline: UNAVAILABLE, nothing recorded", async () => {
    const { sessionId, suggestionId } = await offered();
    testHost.hooks.beforeCreateChat = () => new Promise((resolve) => setTimeout(resolve, 2_000));
    await expectUnavailableNothingRecorded(sessionId, suggestionId);
  });

  test("PostMessage failing: UNAVAILABLE; the retry posts the brief to the recorded chat, once", async () => {
    const { sessionId, suggestionId } = await offered();
    testHost.hooks.beforePostMessage = async () => {
      throw new ConnectError("host restarting", Code.Unavailable);
    };
    const err = await connectErrorOf(
      service.clients.suggestions.startSuggestion({ sessionId, suggestionId }),
    );
    expect(Code[err.code]).toBe("Unavailable");
    testHost.hooks.beforePostMessage = undefined;
    const res = await service.clients.suggestions.startSuggestion({ sessionId, suggestionId });
    const { chat } = await grpcClients(testHost.url).local.getChat({ chatId: res.chatId });
    expect(chat?.messages).toHaveLength(1);
  });

  test("a host that is down: UNAVAILABLE, nothing recorded", async () => {
    const down = await startTestHost();
    const sessionId = uniqueId();
    await down.host.putSession({ sessionId, workspaceId: "ws-1" });
    const s = await startTestServer(undefined, { chatHostUrl: down.url });
    try {
      const d = grpcClients(s.url);
      const { id } = await offerOne(d, sessionId);
      await down.close();
      const before = await logRecords(embedded.redis, sessionId);
      const err = await connectErrorOf(
        d.suggestions.startSuggestion({ sessionId, suggestionId: id }),
      );
      expect(Code[err.code]).toBe("Unavailable");
      expect(err.rawMessage).toBe("the chat host is unavailable");
      expect(await logRecords(embedded.redis, sessionId)).toEqual(before);
      expect(await embedded.redis.exists(startLockKey(sessionId, id))).toBe(0);
    } finally {
      await s.close();
    }
  });
});

test("the remote host process killed: Start answers UNAVAILABLE and records nothing", async () => {
  const hostRedis2 = await ownRedis();
  const host2 = await spawnService(hostRedis2.url);
  const service = await startTestServer(undefined, { chatHostUrl: host2.url });
  try {
    const c = grpcClients(service.url);
    const sessionId = uniqueId();
    await putSession(grpcClients(host2.url), { sessionId });
    const { id } = await offerOne(c, sessionId);
    await host2.kill("SIGKILL");
    const err = await connectErrorOf(
      c.suggestions.startSuggestion({ sessionId, suggestionId: id }),
    );
    expect(Code[err.code]).toBe("Unavailable");
    expect(err.rawMessage).toBe("the chat host is unavailable");
    expect((await logRecords(embedded.redis, sessionId)).map((r) => r.type)).toEqual(["offered"]);
    expect(await embedded.redis.exists(startLockKey(sessionId, id))).toBe(0);
  } finally {
    await service.close();
    await host2.kill();
    await hostRedis2.stop();
    hostRedis2.remove();
  }
});
