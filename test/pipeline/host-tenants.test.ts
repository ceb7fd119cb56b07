import { describe, expect, test } from "vitest";
import { FolderKind, MessageAuthor } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { workspaceGrants } from "../../server/domain/grants.js";
import { embeddedChatId } from "../../server/host/embedded-ids.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import {
  type Answer,
  AUDIENCE,
  answerOf,
  clientsWith,
  HOST_SERVICES,
  type HostRpcName,
  type HostTarget,
  hostBattery,
  ISSUER,
  methodOf,
  type Protocol,
  useJwtIssuer,
} from "../support/tenant-auth.js";

/*
 * The tenant rule on the embedded host's RPCs (ChatHostService and LocalHostService),
 * RPC by RPC (the battery's names are checked against the services' descriptors), over
 * gRPC (the fast path) and Connect (connect-node), for a JWT and a static token that
 * both name one workspace.
 */

const ADMIN = "admin-token-0123456789";
const SCOPED = "scoped-admin-token-0123456789";
/** The one workspace the static token SCOPED opens. */
const WS_SCOPED = uniqueId("ws");
const issuer = useJwtIssuer();
const t = useTestServer({
  settings: () => ({
    authTokens: [
      { role: "host-admin", token: ADMIN },
      { role: "host-admin", token: SCOPED, grants: workspaceGrants([WS_SCOPED]) },
    ],
    authJwt: { jwksFile: issuer.jwksFile, issuer: ISSUER, audience: AUDIENCE },
  }),
});

/** Every RPC name of the embedded host's two services. */
const HOST_RPCS = HOST_SERVICES.flatMap((s) => s.methods.map((m) => m.name)).sort();

/** A session of `workspaceId`, the chat started from its offer, and its brief's message. */
async function startedChat(workspaceId: string): Promise<HostTarget> {
  const admin = clientsWith(t.url, ADMIN);
  const sessionId = uniqueId();
  await admin.local.putSession({
    session: { sessionId, workspaceId, folder: FolderKind.NORMAL },
  });
  const all = clientsWith(t.url, await issuer.sign("agent app workspace:*")).suggestions;
  const { suggestion } = await all.suggestTask({
    context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
    args: { title: "Offer", tldr: "R", brief: `The brief of ${workspaceId}` },
  });
  const started = await all.startSuggestion({ sessionId, suggestionId: suggestion?.id ?? "" });
  const chatId = started.suggestion?.chatId ?? "";
  const { chat } = await admin.local.getChat({ chatId });
  expect(chat?.messages.map((m) => m.text)).toEqual([`The brief of ${workspaceId}`]);
  return { sessionId, chatId, messageId: chat?.messages[0]?.messageId ?? "", workspaceId };
}

/** The answer of an error. */
const error = (code: string, message: string): Answer => ({ code, message, details: [] });

/** `answer` with the ids of `from` written as those of `to`. */
function withIds(answer: Answer, from: HostTarget, to: HostTarget): Answer {
  const text = JSON.stringify(answer)
    .replaceAll(from.sessionId, to.sessionId)
    .replaceAll(from.chatId, to.chatId);
  return JSON.parse(text) as Answer;
}

/** The RPC `name` of the embedded host. */
const method = (name: HostRpcName) => methodOf(name, HOST_SERVICES);

/** The credentials that open one workspace: their token, and the workspace. */
const scoped = [
  ["a JWT", async () => ({ ws: uniqueId("wa"), token: "" })],
  ["a static token", async () => ({ ws: WS_SCOPED, token: SCOPED })],
] as const;

/** A credential of `kind` of workspace A: its workspace and token. */
async function credentialA(kind: (typeof scoped)[number][1]) {
  const { ws, token } = await kind();
  return { ws, token: token || (await issuer.sign(`host-admin workspace:${ws}`)) };
}

describe.each(["grpc", "connect"] as Protocol[])("over %s", (protocol) => {
  test.each(scoped)(
    "%s of workspace A gets, for B's session and chat, what unknown ones get",
    async (_, kind) => {
      const a = await credentialA(kind);
      const wsB = uniqueId("wb");
      const b = await startedChat(wsB);
      const absent = { ...b, sessionId: uniqueId(), chatId: uniqueId() };
      const c = clientsWith(t.url, a.token, protocol);
      const foreign = hostBattery(c, b);
      const none = hostBattery(c, absent);
      const names = Object.keys(foreign) as HostRpcName[];
      expect([...names].sort()).toEqual(HOST_RPCS);
      const expected: Record<HostRpcName, Answer> = {
        GetSession: error("NotFound", `no session "${b.sessionId}"`),
        PostMessage: error("NotFound", `no chat "${b.chatId}"`),
        GetChat: error("NotFound", `no chat "${b.chatId}"`),
        CreateGoal: error("NotFound", `no chat "${b.chatId}"`),
        CreateChat: error("PermissionDenied", `this credential is not granted workspace ${wsB}`),
        PutSession: error("PermissionDenied", `this credential is not granted workspace ${wsB}`),
      };
      for (const name of names) {
        const got = await answerOf(method(name), foreign[name]());
        const want = withIds(await answerOf(method(name), none[name]()), absent, b);
        expect([name, got]).toEqual([name, want]);
        expect([name, got]).toEqual([name, expected[name]]);
      }
      // A started chat is a session, and a session a chat: neither is shown either way.
      expect(
        await answerOf(method("GetSession"), c.host.getSession({ sessionId: b.chatId })),
      ).toEqual(error("NotFound", `no session "${b.chatId}"`));
      expect(await answerOf(method("GetChat"), c.local.getChat({ chatId: b.sessionId }))).toEqual(
        error("NotFound", `no chat "${b.sessionId}"`),
      );
      // B's session (or chat) moved into A, or A's into B: PERMISSION_DENIED.
      for (const sessionId of [b.sessionId, b.chatId]) {
        const moved = c.local.putSession({
          session: { sessionId, workspaceId: a.ws, folder: FolderKind.NORMAL },
        });
        expect(await answerOf(method("PutSession"), moved)).toEqual(
          error(
            "PermissionDenied",
            `this credential is not granted the workspace of session "${sessionId}"`,
          ),
        );
      }
      const mine = uniqueId();
      await c.local.putSession({ session: { sessionId: mine, workspaceId: a.ws } });
      const out = c.local.putSession({ session: { sessionId: mine, workspaceId: wsB } });
      expect(await answerOf(method("PutSession"), out)).toEqual(
        error("PermissionDenied", `this credential is not granted workspace ${wsB}`),
      );
      // Nothing of B's changed, and nothing was made in B.
      const admin = clientsWith(t.url, ADMIN);
      const { session } = await admin.host.getSession(b);
      expect([session?.workspaceId, session?.folder]).toEqual([wsB, FolderKind.NORMAL]);
      const { chat } = await admin.local.getChat(b);
      expect([chat?.workspaceId, chat?.messages.map((m) => m.messageId)]).toEqual([
        wsB,
        [b.messageId],
      ]);
      const made = admin.local.getChat({ chatId: embeddedChatId(`create-${b.chatId}`) });
      expect((await answerOf(method("GetChat"), made)) as { code?: string }).toMatchObject({
        code: "NotFound",
      });
      expect((await admin.host.getSession({ sessionId: mine })).session?.workspaceId).toBe(a.ws);
      // B's agent still offers in B's session.
      const agentB = clientsWith(t.url, await issuer.sign(`agent workspace:${wsB}`)).suggestions;
      const offered = await agentB.suggestTask({
        context: { sessionId: b.sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
        args: { title: "Again", tldr: "R", brief: "B" },
      });
      expect(offered.suggestion?.workspaceId).toBe(wsB);
    },
  );

  test.each(scoped)("%s of workspace A calls every host RPC on A's own", async (_, kind) => {
    const a = await credentialA(kind);
    const own = await startedChat(a.ws);
    const c = clientsWith(t.url, a.token, protocol);
    const calls = hostBattery(c, own);
    expect((await calls.GetSession()).session?.workspaceId).toBe(a.ws);
    expect((await calls.GetChat()).chat?.messages.map((m) => m.text)).toEqual([
      `The brief of ${a.ws}`,
    ]);
    const { messageId } = await calls.PostMessage();
    expect((await c.local.createGoal({ chatId: own.chatId, messageId })).goalId).not.toBe("");
    // The brief is not the person's instruction: the host's own answer, as it is.
    expect(await answerOf(method("CreateGoal"), calls.CreateGoal())).toMatchObject({
      code: "PermissionDenied",
      message: `message "${own.messageId}" is not the person's own instruction; ask the person first`,
    });
    const { chatId } = await calls.CreateChat();
    expect((await c.local.getChat({ chatId })).chat?.workspaceId).toBe(a.ws);
    const { session } = await calls.PutSession();
    expect([session?.workspaceId, session?.folder]).toEqual([a.ws, FolderKind.SCHEDULED_TASK]);
    // Out of every workspace is out of A's grants too.
    const none = c.local.putSession({ session: { sessionId: own.sessionId, workspaceId: "" } });
    expect(await answerOf(method("PutSession"), none)).toEqual(
      error("PermissionDenied", "this credential is not granted sessions in no workspace"),
    );
  });

  test.each([
    ["a workspace:* credential", () => issuer.sign("host-admin workspace:*")],
    ["a static token without grants", async () => ADMIN],
  ])("%s sees and changes every workspace's, and those in none", async (_, token) => {
    const b = await startedChat(uniqueId("wb"));
    const c = clientsWith(t.url, await token(), protocol);
    const calls = hostBattery(c, b);
    expect((await calls.GetSession()).session?.workspaceId).toBe(b.workspaceId);
    expect((await calls.GetChat()).chat?.messages[0]?.text).toBe(`The brief of ${b.workspaceId}`);
    const { messageId } = await calls.PostMessage();
    expect((await c.local.createGoal({ chatId: b.chatId, messageId })).goalId).not.toBe("");
    expect(await answerOf(method("CreateGoal"), calls.CreateGoal())).toMatchObject({
      code: "PermissionDenied",
    });
    expect((await calls.CreateChat()).chatId).not.toBe("");
    expect((await calls.PutSession()).session?.folder).toBe(FolderKind.SCHEDULED_TASK);
    // Moved into another workspace, into none, and back.
    for (const workspaceId of [uniqueId("wc"), "", b.workspaceId]) {
      const put = await c.local.putSession({ session: { sessionId: b.sessionId, workspaceId } });
      expect(put.session?.workspaceId).toBe(workspaceId);
      expect((await c.host.getSession(b)).session?.workspaceId).toBe(workspaceId);
    }
  });
});

test("a session in no workspace is shown to workspace:* only", async () => {
  const sessionId = uniqueId();
  const admin = clientsWith(t.url, ADMIN);
  await admin.local.putSession({ session: { sessionId, workspaceId: "" } });
  const named = clientsWith(t.url, await issuer.sign(`host-admin workspace:${uniqueId("wa")}`));
  expect(await answerOf(method("GetSession"), named.host.getSession({ sessionId }))).toEqual(
    error("NotFound", `no session "${sessionId}"`),
  );
  const post = named.host.postMessage({
    chatId: sessionId,
    idempotencyKey: "k",
    author: MessageAuthor.PERSON,
    text: "Hi",
  });
  expect(await answerOf(method("PostMessage"), post)).toEqual(
    error("NotFound", `no chat "${sessionId}"`),
  );
  const all = clientsWith(t.url, await issuer.sign("host-admin workspace:*"));
  expect((await all.host.getSession({ sessionId })).session?.sessionId).toBe(sessionId);
  expect((await all.local.getChat({ chatId: sessionId })).chat?.messages).toEqual([]);
});
