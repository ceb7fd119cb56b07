import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { SessionSchema } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { workspaceGrants } from "../../server/domain/grants.js";
import { EmbeddedChatHost } from "../../server/host/embedded-host.js";
import { grantedEmbeddedHost } from "../../server/rpc/host-tenant-guard.js";
import { connectErrorOf, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";

const t = useTestServer();

/**
 * A host on which another credential puts the session in workspace B right before each
 * create: the state between the guard reading a session as unknown and its write.
 */
class RacedHost extends EmbeddedChatHost {
  override async createSession(session: MessageInitShape<typeof SessionSchema> | undefined) {
    const { sessionId } = create(SessionSchema, session ?? {});
    await super.putSession({ sessionId, workspaceId: "ws-b" });
    return super.createSession(session);
  }
}

test("a session made in workspace B while A's PutSession decided is not taken over", async () => {
  const host = new RacedHost(t.redis);
  const sessionId = uniqueId();
  const a = grantedEmbeddedHost(host, workspaceGrants(["ws-a"]));
  const err = await connectErrorOf(a.putSession({ sessionId, workspaceId: "ws-a" }));
  expect([Code[err.code], err.rawMessage]).toEqual([
    "PermissionDenied",
    `this credential is not granted the workspace of session "${sessionId}"`,
  ]);
  expect((await host.getSession({ sessionId })).session?.workspaceId).toBe("ws-b");
});

test("an unknown session is created in a granted workspace", async () => {
  const host = new EmbeddedChatHost(t.redis);
  const sessionId = uniqueId();
  const a = grantedEmbeddedHost(host, workspaceGrants(["ws-a"]));
  expect((await a.putSession({ sessionId, workspaceId: "ws-a" })).session?.workspaceId).toBe(
    "ws-a",
  );
  expect((await host.getSession({ sessionId })).session?.workspaceId).toBe("ws-a");
});
