import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, test } from "vitest";
import {
  ApprovalPolicy,
  ChatSettingsSchema,
  FolderKind,
  Permission,
  SandboxMode,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { startedChatSettings } from "../../server/domain/started-chat.js";
import { type Clients, putSession, uniqueId } from "../support/harness.js";
import { useTestHost, useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const testHost = useTestHost();
const embedded = useTestServer();
const remote = useTestServer({ settings: () => ({ chatHostUrl: testHost.url }) });

/** Starts an offer from a session with `settings`; answers the new chat and its session. */
async function startFrom(
  c: Clients,
  host: Clients,
  settings: MessageInitShape<typeof ChatSettingsSchema>,
) {
  const sessionId = uniqueId();
  await putSession(host, {
    sessionId,
    workspaceId: "ws-settings",
    settings: create(ChatSettingsSchema, settings),
  });
  const offer = await offerOne(c, sessionId, "Tidy the build");
  const { chatId } = await c.suggestions.startSuggestion({ sessionId, suggestionId: offer.id });
  const { chat } = await host.local.getChat({ chatId });
  const { session } = await host.host.getSession({ sessionId: chatId });
  return { sessionId, chatId, chat, session };
}

describe("a chat started from a suggestion", () => {
  test("with a preset: the preset, model and permission; sandbox and approval left to the preset", async () => {
    const { chat, session } = await startFrom(embedded.clients, embedded.clients, {
      presetId: "writer",
      model: "model-a",
      permission: Permission.DEFAULT,
      sandbox: SandboxMode.WORKSPACE_WRITE,
      approval: ApprovalPolicy.ON_REQUEST,
    });
    const expected = {
      presetId: "writer",
      model: "model-a",
      permission: Permission.DEFAULT,
      sandbox: SandboxMode.UNSPECIFIED,
      approval: ApprovalPolicy.UNSPECIFIED,
    };
    expect(chat).toMatchObject({ workspaceId: "ws-settings", title: "Tidy the build" });
    expect(chat?.settings).toMatchObject(expected);
    expect(session).toMatchObject({
      workspaceId: "ws-settings",
      folder: FolderKind.NORMAL,
      settings: expected,
    });
  });

  test("without a preset: model, permission, sandbox and approval copied", async () => {
    const settings = {
      presetId: "",
      model: "model-b",
      permission: Permission.FULL_ACCESS,
      sandbox: SandboxMode.FULL_ACCESS,
      approval: ApprovalPolicy.NEVER,
    };
    const { chat, session } = await startFrom(embedded.clients, embedded.clients, settings);
    expect(chat?.settings).toMatchObject(settings);
    expect(session?.settings).toMatchObject(settings);
  });

  test("a read-only chat on a preset that defaults to full access starts a read-only chat", async () => {
    // The test host resolves presets as a real host does: `autopilot` fills full access
    // into whatever the request leaves unset. The request carries read-only explicitly.
    const { chat, session } = await startFrom(remote.clients, testHost.clients, {
      presetId: "autopilot",
      model: "model-c",
      permission: Permission.READ_ONLY,
    });
    const sent = testHost.calls.createChat.at(-1);
    expect(sent?.settings).toMatchObject({
      presetId: "autopilot",
      model: "model-c",
      permission: Permission.READ_ONLY,
      sandbox: SandboxMode.UNSPECIFIED,
      approval: ApprovalPolicy.UNSPECIFIED,
    });
    const resolved = {
      presetId: "autopilot",
      model: "model-c",
      permission: Permission.READ_ONLY,
      sandbox: SandboxMode.FULL_ACCESS,
      approval: ApprovalPolicy.NEVER,
    };
    expect(chat?.settings).toMatchObject(resolved);
    expect(session?.settings).toMatchObject(resolved);
    expect(chat?.settings?.permission).toBeLessThanOrEqual(Permission.READ_ONLY);
  });

  test("the same read-only chat on the embedded host: read-only too", async () => {
    const { chat } = await startFrom(embedded.clients, embedded.clients, {
      presetId: "autopilot",
      model: "model-c",
      permission: Permission.READ_ONLY,
    });
    expect(chat?.settings?.permission).toBe(Permission.READ_ONLY);
  });
});

describe("startedChatSettings", () => {
  test("never carries a permission other than the offering chat's, for every combination", () => {
    for (const presetId of ["", "p"]) {
      for (const permission of [
        Permission.UNSPECIFIED,
        Permission.READ_ONLY,
        Permission.DEFAULT,
        Permission.FULL_ACCESS,
      ]) {
        const offering = create(ChatSettingsSchema, {
          presetId,
          model: "m",
          permission,
          sandbox: SandboxMode.READ_ONLY,
          approval: ApprovalPolicy.UNTRUSTED,
        });
        const started = create(ChatSettingsSchema, startedChatSettings(offering));
        expect(started.permission).toBe(permission);
        expect(started.model).toBe("m");
        expect(started.presetId).toBe(presetId);
        expect(started.sandbox).toBe(presetId ? SandboxMode.UNSPECIFIED : SandboxMode.READ_ONLY);
        expect(started.approval).toBe(
          presetId ? ApprovalPolicy.UNSPECIFIED : ApprovalPolicy.UNTRUSTED,
        );
      }
    }
  });

  test("an offering chat with no settings starts one with none", () => {
    expect(create(ChatSettingsSchema, startedChatSettings(undefined))).toEqual(
      create(ChatSettingsSchema),
    );
  });
});
