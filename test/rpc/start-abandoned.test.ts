import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { sessionKeys, startLockKey } from "../../server/store/keys.js";
import { connectErrorOf, putSession, uniqueId } from "../support/harness.js";
import { logRecords } from "../support/lists.js";
import { useTestHost, useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

/*
 * A Start fixes its options with a `starting` record in its first step
 * (lua/beginStart-4.lua), before it knows whether a chat can be made. When it fails
 * before any chat can exist (the session has no workspace, or the host refuses
 * CreateChat), the record is abandoned (lua/abandonStart-4.lua) and the lock released,
 * so a later Start is fixed with its own options. When the host may have made the chat
 * (it was unavailable), the options stay, and a later Start takes them over.
 */

describe("with the embedded host", () => {
  const t = useTestServer();

  test.each([
    ["belongs to no workspace", { workspaceId: "" }],
    ["runs in a scheduled task's folder", { folder: FolderKind.SCHEDULED_TASK }],
  ] as const)(
    "a session that %s: the starting record is abandoned, a later Start's options win",
    async (_, missing) => {
      const sessionId = uniqueId();
      await putSession(t.clients, { sessionId });
      const { id: suggestionId } = await offerOne(t.clients, sessionId, "Port the tests");
      await putSession(t.clients, { sessionId, ...missing });
      const s = t.clients.suggestions;
      const refused = await connectErrorOf(
        s.startSuggestion({ sessionId, suggestionId, options: { model: "first", brief: "First" } }),
      );
      expect(refused.code).toBe(Code.FailedPrecondition);
      const records = await logRecords(t.redis, sessionId);
      expect(records.map((r) => r.type)).toEqual(["offered", "starting", "abandoned"]);
      const entries = await t.redis.xrange(sessionKeys(sessionId).log, "-", "+");
      expect(records[1]).toMatchObject({ id: suggestionId, model: "first", brief: "First" });
      expect(records[2]).toMatchObject({ id: suggestionId, starting: entries[1]?.[0] });
      expect(await t.redis.hexists(sessionKeys(sessionId).projection, `o:${suggestionId}`)).toBe(0);
      expect(await t.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);

      // Repeated, it leaves the same three kinds of record again, and nothing else.
      await connectErrorOf(s.startSuggestion({ sessionId, suggestionId }));
      expect((await logRecords(t.redis, sessionId)).map((r) => r.type)).toEqual([
        "offered",
        "starting",
        "abandoned",
        "starting",
        "abandoned",
      ]);

      // The session gets a workspace: the next Start's own options make the chat.
      await putSession(t.clients, { sessionId, workspaceId: "ws-1" });
      const res = await s.startSuggestion({
        sessionId,
        suggestionId,
        options: { model: "second", brief: "Second" },
      });
      const { chat } = await t.clients.local.getChat({ chatId: res.chatId });
      expect(chat?.settings?.model).toBe("second");
      expect(chat?.messages.map((m) => m.text)).toEqual(["Second"]);
      expect(res.suggestion?.startOptions).toMatchObject({ model: "second", brief: "Second" });
      const after = await logRecords(t.redis, sessionId);
      expect(after.find((r) => r.outcome === "started")).toMatchObject({
        model: "second",
        brief: "Second",
      });
      // The projection folded again from the log reads the same options.
      await t.redis.del(sessionKeys(sessionId).projection);
      const again = await s.getSuggestion({ sessionId, suggestionId });
      expect(again.suggestion?.startOptions?.model).toBe("second");
    },
  );

  test("a folded log: an abandoned record frees the options of the start it names only", async () => {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId, workspaceId: "" });
    const { id: suggestionId } = await offerOne(t.clients, sessionId, "Fold it");
    await connectErrorOf(
      t.clients.suggestions.startSuggestion({ sessionId, suggestionId, options: { model: "a" } }),
    );
    // Projection deleted: rebuilt from the log, where `abandoned` names the first record.
    await t.redis.del(sessionKeys(sessionId).projection);
    await putSession(t.clients, { sessionId, workspaceId: "ws-1" });
    const res = await t.clients.suggestions.startSuggestion({
      sessionId,
      suggestionId,
      options: { model: "b" },
    });
    expect(res.suggestion?.startOptions?.model).toBe("b");
  });
});

describe("with a remote host", () => {
  const testHost = useTestHost();
  const t = useTestServer({ settings: () => ({ chatHostUrl: testHost.url }) });
  afterEach(() => {
    testHost.hooks.beforeCreateChat = undefined;
  });

  async function offered() {
    const sessionId = uniqueId();
    await putSession(testHost.clients, { sessionId });
    const { id } = await offerOne(t.clients, sessionId, "Remote task");
    return { sessionId, suggestionId: id };
  }

  test("CreateChat refused (INVALID_ARGUMENT): the options are abandoned, a later Start's win", async () => {
    const { sessionId, suggestionId } = await offered();
    testHost.hooks.beforeCreateChat = async (request) => {
      if (request.settings?.model === "unknown-model") {
        throw new ConnectError("no such model: unknown-model", Code.InvalidArgument);
      }
    };
    const s = t.clients.suggestions;
    const refused = await connectErrorOf(
      s.startSuggestion({ sessionId, suggestionId, options: { model: "unknown-model" } }),
    );
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.InvalidArgument,
      "no such model: unknown-model",
    ]);
    expect((await logRecords(t.redis, sessionId)).map((r) => r.type)).toEqual([
      "offered",
      "starting",
      "abandoned",
    ]);
    expect(await t.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
    const res = await s.startSuggestion({ sessionId, suggestionId, options: { model: "known" } });
    expect(res.suggestion?.state).toBe(SuggestionState.STARTED);
    expect(testHost.calls.createChat.at(-1)?.settings?.model).toBe("known");
    const { chat } = await testHost.clients.local.getChat({ chatId: res.chatId });
    expect(chat?.settings?.model).toBe("known");
  });

  test("the host unavailable: the options stay (the chat may exist), a later Start takes them over", async () => {
    const { sessionId, suggestionId } = await offered();
    testHost.hooks.beforeCreateChat = async () => {
      throw new ConnectError("host restarting", Code.Unavailable);
    };
    const s = t.clients.suggestions;
    const failed = await connectErrorOf(
      s.startSuggestion({ sessionId, suggestionId, options: { model: "first" } }),
    );
    expect(failed.code).toBe(Code.Unavailable);
    expect((await logRecords(t.redis, sessionId)).map((r) => r.type)).toEqual([
      "offered",
      "starting",
    ]);
    expect(await t.redis.exists(startLockKey(sessionId, suggestionId))).toBe(0);
    testHost.hooks.beforeCreateChat = undefined;
    const res = await s.startSuggestion({ sessionId, suggestionId, options: { model: "second" } });
    expect(res.suggestion?.startOptions?.model).toBe("first");
    const { chat } = await testHost.clients.local.getChat({ chatId: res.chatId });
    expect(chat?.settings?.model).toBe("first");
  });
});
