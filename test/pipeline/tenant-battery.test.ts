import { describe, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { mayCall, type Role } from "../../server/pipeline/auth.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import {
  AUDIENCE,
  answerOf,
  clientsWith,
  ISSUER,
  methodOf,
  type Protocol,
  type RpcName,
  rpcBattery,
  type Target,
  useJwtIssuer,
} from "../support/tenant-auth.js";

/*
 * The tenant rule (docs/operating.md "Credentials and tenants"), RPC by RPC: every RPC of SuggestionService (the
 * list is read from the service's descriptor, so an RPC added to the proto fails here
 * until it is in the battery), over gRPC (the fast path) and Connect (connect-node).
 */

const ADMIN = "admin-token-0123456789";
const issuer = useJwtIssuer();
const t = useTestServer({
  settings: () => ({
    authTokens: [{ role: "host-admin", token: ADMIN }],
    authJwt: { jwksFile: issuer.jwksFile, issuer: ISSUER, audience: AUDIENCE },
  }),
});

/** Every RPC of SuggestionService against one chat, by `token` over `protocol`. */
function battery(token: string, protocol: Protocol, target: Target) {
  return rpcBattery(clientsWith(t.url, token, protocol).suggestions, target);
}

/** A chat of `workspaceId` on the embedded host with one open offer titled "Offer". */
async function chatWithOffer(workspaceId: string): Promise<Target> {
  const sessionId = uniqueId();
  await clientsWith(t.url, ADMIN).local.putSession({
    session: { sessionId, workspaceId, folder: FolderKind.NORMAL },
  });
  const agent = clientsWith(t.url, await issuer.sign(`agent workspace:${workspaceId || "*"}`));
  const { suggestion } = await agent.suggestions.suggestTask({
    context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
    args: { title: "Offer", tldr: "R", brief: "B" },
  });
  return { sessionId, suggestionId: suggestion?.id ?? "", workspaceId };
}

test("the battery calls every RPC of SuggestionService, unary and streams", () => {
  const names = Object.keys(
    battery("x", "grpc", { sessionId: "", suggestionId: "", workspaceId: "" }),
  );
  expect(names.sort()).toEqual(SuggestionService.methods.map((m) => m.name).sort());
  // Both kinds the service has are in it.
  expect(new Set(SuggestionService.methods.map((m) => m.methodKind))).toEqual(
    new Set(["unary", "server_streaming"]),
  );
});

describe.each(["grpc", "connect"] as const)("over %s", (protocol) => {
  test("workspace B's credential gets, for A's chat, what a truly absent chat gets", async () => {
    const wsA = uniqueId("wa");
    const a = await chatWithOffer(wsA);
    const absent = { sessionId: uniqueId(), suggestionId: a.suggestionId, workspaceId: wsA };
    const token = await issuer.sign(`agent app workspace:${uniqueId("wb")}`);
    const foreign = battery(token, protocol, a);
    const none = battery(token, protocol, absent);
    for (const name of Object.keys(foreign) as RpcName[]) {
      const method = methodOf(name);
      const got = await answerOf(method, foreign[name]());
      const want = await answerOf(method, none[name]());
      expect([name, got]).toEqual([name, want]);
      if (name.includes("Workspace")) {
        // The inbox of a workspace not granted, whichever it is.
        expect([name, got]).toEqual([
          name,
          {
            code: "PermissionDenied",
            message: `this credential is not granted workspace ${wsA}`,
            details: [],
          },
        ]);
      }
    }
    // Nothing of A's was touched (DeleteSuggestions, Start, the settlements): A's own
    // credential still sees the offer open and not started, and the host its session.
    const own = clientsWith(t.url, await issuer.sign(`app workspace:${wsA}`)).suggestions;
    const lists = await own.listSuggestions({ sessionId: a.sessionId });
    expect(lists.open.map((s) => [s.id, s.title, s.chatId])).toEqual([
      [a.suggestionId, "Offer", ""],
    ]);
    expect(lists.settled).toEqual([]);
    const { session } = await clientsWith(t.url, ADMIN).host.getSession(a);
    expect(session?.workspaceId).toBe(wsA);
  });

  test.each([
    ["A's own credential", (ws: string) => `agent app workspace:${ws}`],
    ["a workspace:* credential", () => "agent app workspace:*"],
  ])("%s sees and acts on A's chat with every RPC", async (_, scope) => {
    const wsA = uniqueId("wa");
    const a = await chatWithOffer(wsA);
    const calls = battery(await issuer.sign(scope(wsA)), protocol, a);
    const called = new Set<RpcName>();
    const call = <N extends RpcName>(name: N): ReturnType<ReturnType<typeof battery>[N]> => {
      called.add(name);
      return calls[name]() as ReturnType<ReturnType<typeof battery>[N]>;
    };
    const id = a.suggestionId;
    expect((await call("GetSuggestion")).suggestion?.id).toBe(id);
    expect((await call("ListSuggestions")).open.map((s) => s.id)).toEqual([id]);
    expect((await call("WatchSuggestions"))?.open.map((s) => s.id)).toEqual([id]);
    expect((await call("ListWorkspaceSuggestions")).suggestions.map((s) => s.id)).toEqual([id]);
    expect((await call("WatchWorkspaceSuggestions"))?.suggestions.map((s) => s.id)).toEqual([id]);
    const another = (await call("SuggestTask")).suggestion;
    expect(another?.title).toBe("Another");
    expect((await call("WithdrawSuggestion")).suggestion?.id).toBe(id);
    expect((await call("ListSettlements")).settlements).toHaveLength(1);
    expect((await call("RestoreSuggestion")).suggestion?.id).toBe(id);
    expect((await call("DismissSuggestion")).suggestion?.id).toBe(id);
    expect((await call("RestoreSuggestion")).suggestion?.id).toBe(id);
    expect((await call("DraftSuggestion")).suggestion?.id).toBe(id);
    // Start the other open offer: a chat is made for it.
    called.add("StartSuggestion");
    const c = clientsWith(t.url, await issuer.sign(scope(wsA)), protocol).suggestions;
    const started = await c.startSuggestion({
      sessionId: a.sessionId,
      suggestionId: another?.id ?? "",
    });
    expect(started.suggestion?.chatId).not.toBe("");
    // And the chat is erased: it reads as one that never offered anything.
    expect(await call("DeleteSuggestions")).toMatchObject({});
    const after = await call("ListSuggestions");
    expect([after.open, after.settled]).toEqual([[], []]);
    expect([...called].sort()).toEqual(SuggestionService.methods.map((m) => m.name).sort());
  });

  test("a role outside the RPC's is PERMISSION_DENIED, for every RPC", async () => {
    const wsA = uniqueId("wa");
    const a = await chatWithOffer(wsA);
    const roles: Role[] = ["agent", "app", "host-admin"];
    for (const method of SuggestionService.methods) {
      const procedure = `/${SuggestionService.typeName}/${method.name}`;
      const outside = roles.find((r) => !mayCall([r], procedure));
      if (outside === undefined) throw new Error(`every role may call ${method.name}`);
      const calls = battery(await issuer.sign(`${outside} workspace:*`), protocol, a);
      const got = await answerOf(method, calls[method.name as RpcName]());
      expect([method.name, got]).toEqual([
        method.name,
        {
          code: "PermissionDenied",
          message: `a token of the ${outside} role may not call ${procedure.slice(1)}`,
          details: [],
        },
      ]);
    }
    // The offer is still there, open.
    const own = clientsWith(t.url, await issuer.sign(`app workspace:${wsA}`)).suggestions;
    expect((await own.listSuggestions(a)).open.map((s) => s.id)).toEqual([a.suggestionId]);
  });
});

test("a chat in no workspace is erased by a workspace:* credential only", async () => {
  const a = await chatWithOffer("");
  const named = clientsWith(t.url, await issuer.sign(`app workspace:${uniqueId("wa")}`));
  expect(await named.suggestions.deleteSuggestions(a)).toMatchObject({});
  const all = clientsWith(t.url, await issuer.sign("app workspace:*")).suggestions;
  expect((await all.listSuggestions(a)).open.map((s) => s.id)).toEqual([a.suggestionId]);
  await all.deleteSuggestions(a);
  expect((await all.listSuggestions(a)).open).toEqual([]);
});
