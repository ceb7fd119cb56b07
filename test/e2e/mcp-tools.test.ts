import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { DismissReason, SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { mcpTool } from "../../sdk/src/tool.js";
import { withdrawSuggestionTool } from "../../sdk/src/withdraw-tool.js";
import { putSession, uniqueId } from "../support/harness.js";
import { logRecords } from "../support/lists.js";
import { mcpClient, toolMeta } from "../support/mcp.js";
import { useTestServer } from "../support/server-fixture.js";
import { NOTE } from "../support/settlements.js";
import { keysOf, offer, offerOne, REFUSAL_TEXT, successText } from "../support/suggest.js";
import { WITHDRAW_TEXT } from "../support/withdraw.js";

// The MCP endpoint through the official SDK's client: the three tools, each running the
// same RPC as gRPC (the offer is then seen over gRPC), every refusal of the reference
// with its exact text as a tool error, and the call's context from `_meta`, the
// `Oda-Session-Id` header or a known host's conversation id.

const t = useTestServer();
let client: Client;
beforeAll(async () => {
  client = await mcpClient(t.url);
});
afterAll(() => client.close());

/** A new chat on the embedded host (a normal folder of ws-1 unless told). */
async function chat(init: Partial<Parameters<typeof putSession>[1]> = {}): Promise<string> {
  const sessionId = uniqueId("mcp");
  await putSession(t.clients, { sessionId, ...init });
  return sessionId;
}

/** Calls a tool and answers its text, whether it is an error, and its structured content. */
async function call(name: string, args: Record<string, unknown>, meta: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args, _meta: meta });
  const content = result.content as { type: string; text: string }[];
  return {
    text: content[0]?.text,
    isError: result.isError === true,
    structured: result.structuredContent as Record<string, unknown> | undefined,
  };
}

const ARGS = {
  title: "Retry failed uploads",
  tldr: "Uploads fail on flaky networks",
  brief: "Add retries.",
};

describe("tools/list", () => {
  test("lists suggest_task and withdraw_suggestion exactly as the SDK's mcpTool(), and list_suggestions", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      "suggest_task",
      "withdraw_suggestion",
      "list_suggestions",
    ]);
    expect(tools[0]).toEqual(mcpTool());
    expect(tools[1]).toEqual(mcpTool(withdrawSuggestionTool));
    expect(tools[2]?.inputSchema).toEqual({
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false,
    });
  });

  test("the official v2 client lists the tools and calls suggest_task too", async () => {
    const v2 = new ClientV2({ name: "suggest-task-tests", version: "2.0.0" });
    await v2.connect(new TransportV2(new URL(`${t.url}/mcp`)));
    try {
      expect((await v2.listTools()).tools.map((tool) => tool.name)).toHaveLength(3);
      const sessionId = await chat();
      const result = await v2.callTool({
        name: "suggest_task",
        arguments: ARGS,
        _meta: toolMeta(sessionId, { turnId: "turn-v2" }),
      });
      expect(result.content).toEqual([{ type: "text", text: successText(ARGS.title) }]);
    } finally {
      await v2.close();
    }
  });
});

describe("suggest_task", () => {
  test("a recorded offer answers the success line and its id, and is seen over gRPC", async () => {
    const sessionId = await chat();
    const meta = toolMeta(sessionId, { turnId: "turn-1", role: "top_level", toolCallId: "call-1" });
    const result = await call("suggest_task", ARGS, meta);
    expect(result).toEqual({
      text: successText(ARGS.title),
      isError: false,
      structured: { suggestion_id: expect.any(String) },
    });
    const { open } = await t.clients.suggestions.listSuggestions({ sessionId });
    expect(open.map((s) => [s.id, s.turnId, s.title, s.tldr, s.brief])).toEqual([
      [result.structured?.suggestion_id, "turn-1", ARGS.title, ARGS.tldr, ARGS.brief],
    ]);
  });

  test("a repeated oda.suggest/tool_call_id answers the first result and records nothing more", async () => {
    const sessionId = await chat();
    const meta = toolMeta(sessionId, { turnId: "turn-r", toolCallId: "call-r" });
    const first = await call("suggest_task", ARGS, meta);
    const again = await call("suggest_task", { ...ARGS, title: "Something else" }, meta);
    expect(again).toEqual(first);
    const offered = (await logRecords(t.redis, sessionId)).filter((r) => r.type === "offered");
    expect(offered).toHaveLength(1);
  });

  test("every refusal of the reference is a tool error with its exact text", async () => {
    const cases: [
      string,
      () => Promise<Record<string, unknown>>,
      Record<string, unknown>,
      string,
    ][] = [
      [
        "a helper",
        async () => toolMeta(await chat(), { turnId: "t", role: "helper" }),
        ARGS,
        REFUSAL_TEXT.helper,
      ],
      ["no chat", async () => ({ "oda.suggest/turn_id": "t" }), ARGS, REFUSAL_TEXT.noSession],
      [
        "an unknown chat",
        async () => toolMeta(uniqueId("none"), { turnId: "t" }),
        ARGS,
        REFUSAL_TEXT.noSession,
      ],
      [
        "a scheduled task's folder",
        async () => toolMeta(await chat({ folder: FolderKind.SCHEDULED_TASK }), { turnId: "t" }),
        ARGS,
        REFUSAL_TEXT.scheduled,
      ],
      [
        "no open turn",
        async () => toolMeta(await chat(), { turnId: "" }),
        ARGS,
        REFUSAL_TEXT.noTurn,
      ],
      [
        "an empty field",
        async () => toolMeta(await chat(), { turnId: "t" }),
        { ...ARGS, tldr: "   " },
        "suggest_task: tldr must not be empty",
      ],
      [
        "a missing field",
        async () => toolMeta(await chat(), { turnId: "t" }),
        { title: ARGS.title, tldr: ARGS.tldr },
        "suggest_task: brief must not be empty",
      ],
      [
        "a field over its limit",
        async () => toolMeta(await chat(), { turnId: "t" }),
        { ...ARGS, title: "x".repeat(61) },
        "suggest_task: title must be at most 60 characters (got 61)",
      ],
      [
        "a control character",
        async () => toolMeta(await chat(), { turnId: "t" }),
        { ...ARGS, title: "a\u0007b" },
        "suggest_task: title must not contain control characters",
      ],
    ];
    for (const [what, meta, args, text] of cases) {
      const result = await call("suggest_task", args, await meta());
      expect({ what, ...result }).toEqual({ what, text, isError: true, structured: undefined });
    }
  });

  test("the quotas: one per turn, three open, ten a chat", async () => {
    const sessionId = await chat();
    const at = (turnId: string) => toolMeta(sessionId, { turnId });
    expect((await call("suggest_task", { ...ARGS, title: "One" }, at("q-1"))).isError).toBe(false);
    expect(await call("suggest_task", { ...ARGS, title: "Two" }, at("q-1"))).toMatchObject({
      text: REFUSAL_TEXT.turn,
      isError: true,
    });
    await call("suggest_task", { ...ARGS, title: "Two" }, at("q-2"));
    await call("suggest_task", { ...ARGS, title: "Three" }, at("q-3"));
    expect(await call("suggest_task", { ...ARGS, title: "Four" }, at("q-4"))).toMatchObject({
      text: REFUSAL_TEXT.open,
      isError: true,
    });
    // Dismissed by the person, the three make room; seven more reach the chat's ten.
    const dismissAll = async () => {
      const { open } = await t.clients.suggestions.listSuggestions({ sessionId });
      for (const s of open) {
        await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: s.id });
      }
    };
    for (let n = 4; n <= 10; n++) {
      if (n % 3 === 1) await dismissAll();
      await offer(t.clients, { sessionId, title: `Offer ${n}` });
    }
    await dismissAll();
    expect(await call("suggest_task", { ...ARGS, title: "Eleven" }, at("q-11"))).toMatchObject({
      text: REFUSAL_TEXT.lifetime,
      isError: true,
    });
  });
});

describe("the call's context", () => {
  test("the chat from the Oda-Session-Id header, Codex's threadId or VS Code's conversation id", async () => {
    const viaHeader = await chat();
    const headerClient = await mcpClient(t.url, { "oda-session-id": viaHeader });
    try {
      const result = await headerClient.callTool({ name: "suggest_task", arguments: ARGS });
      expect(result.isError).not.toBe(true);
    } finally {
      await headerClient.close();
    }
    const codex = await chat();
    const vscode = await chat();
    expect((await call("suggest_task", ARGS, { threadId: codex })).isError).toBe(false);
    expect((await call("suggest_task", ARGS, { "vscode.conversationId": vscode })).isError).toBe(
      false,
    );
    for (const sessionId of [viaHeader, codex, vscode]) {
      const { open } = await t.clients.suggestions.listSuggestions({ sessionId });
      expect(open.map((s) => s.title)).toEqual([ARGS.title]);
    }
  });

  test("_meta's session wins over the header", async () => {
    const named = await chat();
    const other = await chat();
    const headerClient = await mcpClient(t.url, { "oda-session-id": other });
    try {
      await headerClient.callTool({
        name: "suggest_task",
        arguments: ARGS,
        _meta: toolMeta(named),
      });
    } finally {
      await headerClient.close();
    }
    expect((await t.clients.suggestions.listSuggestions({ sessionId: named })).open).toHaveLength(
      1,
    );
    expect((await t.clients.suggestions.listSuggestions({ sessionId: other })).open).toHaveLength(
      0,
    );
  });

  test("without a turn id each call is a turn of its own; without a role it is the top level", async () => {
    const sessionId = await chat();
    await call("suggest_task", { ...ARGS, title: "First" }, toolMeta(sessionId));
    await call("suggest_task", { ...ARGS, title: "Second" }, toolMeta(sessionId));
    const { open } = await t.clients.suggestions.listSuggestions({ sessionId });
    expect(open.map((s) => s.title)).toEqual(["Second", "First"]);
    expect(new Set(open.map((s) => s.turnId)).size).toBe(2);
  });

  test("a role that is neither top_level nor helper is a tool error, and nothing is written", async () => {
    const sessionId = uniqueId("mcp-role");
    const result = await call("suggest_task", ARGS, toolMeta(sessionId, { role: "boss" }));
    expect(result).toEqual({
      text: '_meta["oda.suggest/role"] must be "top_level" or "helper" (got "boss")',
      isError: true,
      structured: undefined,
    });
    expect(await keysOf(t.redis, sessionId)).toEqual([]);
  });
});

describe("withdraw_suggestion and list_suggestions", () => {
  test("withdraws an open offer by its title; a title with no open offer is the reference's refusal", async () => {
    const sessionId = await chat();
    const id = (await offerOne(t.clients, sessionId, "Tidy the docs")).id;
    const meta = toolMeta(sessionId, { turnId: "w-1" });
    const withdrawn = await call(
      "withdraw_suggestion",
      { title: "Tidy the docs", reason: "Done here" },
      meta,
    );
    expect(withdrawn).toEqual({
      text: WITHDRAW_TEXT.success("Tidy the docs"),
      isError: false,
      structured: { suggestion_id: id },
    });
    const again = await call(
      "withdraw_suggestion",
      { title: "Tidy the docs", reason: "Done" },
      meta,
    );
    expect(again).toEqual({
      text: WITHDRAW_TEXT.noOpenOffer("Tidy the docs"),
      isError: true,
      structured: undefined,
    });
    const helper = toolMeta(sessionId, { turnId: "w-2", role: "helper" });
    expect((await call("withdraw_suggestion", { title: "x", reason: "y" }, helper)).text).toBe(
      WITHDRAW_TEXT.helper,
    );
  });

  test("lists the chat's offers, open and settled, each with its state and its settlement's line", async () => {
    const sessionId = await chat();
    const ids: Record<string, string> = {};
    for (const title of ["Started", "Drafted", "Dismissed", "Noted", "Withdrawn", "Waiting"]) {
      ids[title] = (await offerOne(t.clients, sessionId, title)).id;
      if (title === "Started")
        await t.clients.suggestions.startSuggestion({ sessionId, suggestionId: ids[title] });
      if (title === "Drafted")
        await t.clients.suggestions.draftSuggestion({ sessionId, suggestionId: ids[title] });
      if (title === "Dismissed")
        await t.clients.suggestions.dismissSuggestion({ sessionId, suggestionId: ids[title] });
      if (title === "Noted") {
        await t.clients.suggestions.dismissSuggestion({
          sessionId,
          suggestionId: ids[title],
          reason: DismissReason.ALREADY_DONE,
          note: "Fixed last week",
        });
      }
      if (title === "Withdrawn") {
        await call(
          "withdraw_suggestion",
          { title, reason: "Did it" },
          toolMeta(sessionId, { turnId: "w" }),
        );
      }
    }
    const result = await call("list_suggestions", {}, toolMeta(sessionId));
    const expected = {
      suggestions: [
        { suggestion_id: ids.Waiting, title: "Waiting", state: "open" },
        {
          suggestion_id: ids.Started,
          title: "Started",
          state: "started",
          note: NOTE.started("Started"),
        },
        {
          suggestion_id: ids.Drafted,
          title: "Drafted",
          state: "drafted",
          note: NOTE.drafted("Drafted"),
        },
        {
          suggestion_id: ids.Dismissed,
          title: "Dismissed",
          state: "dismissed",
          note: NOTE.dismissed("Dismissed"),
        },
        {
          suggestion_id: ids.Noted,
          title: "Noted",
          state: "dismissed",
          note: 'The user dismissed your suggestion "Noted" as already done; do not offer it again. Their note: Fixed last week',
        },
        {
          suggestion_id: ids.Withdrawn,
          title: "Withdrawn",
          state: "dismissed",
          note: NOTE.withdrawn("Withdrawn"),
        },
      ],
    };
    expect(result).toEqual({
      text: JSON.stringify(expected),
      isError: false,
      structured: expected,
    });
    const { settled } = await t.clients.suggestions.listSuggestions({ sessionId });
    expect(settled.map((s) => s.state)).toEqual([
      SuggestionState.STARTED,
      SuggestionState.DRAFTED,
      SuggestionState.DISMISSED,
      SuggestionState.DISMISSED,
      SuggestionState.DISMISSED,
    ]);
  });

  test("a call with no chat behind it is the reference's refusal", async () => {
    expect(await call("list_suggestions", {}, {})).toEqual({
      text: REFUSAL_TEXT.noSession,
      isError: true,
      structured: undefined,
    });
  });
});
