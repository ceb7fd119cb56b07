import { create } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  ChatSettingsSchema,
  MessageAuthor,
  Permission,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import {
  AgentRole,
  DismissReason,
  RefusalReason,
  SettlementOutcome,
  SuggestionState,
  SuggestTaskRefusalSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { type Clients, connectErrorOf, putSession, uniqueId } from "../support/harness.js";
import { logRecords } from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const a = useTestServer();
const b = useTestServer();

async function session(c: Clients, permission = Permission.DEFAULT, presetId = "") {
  const sessionId = uniqueId();
  await putSession(c, {
    sessionId,
    workspaceId: "ws-pd",
    settings: create(ChatSettingsSchema, { presetId, model: "big", permission }),
  });
  return sessionId;
}

/** The two transports every pinned string is checked through. */
const transports = [
  ["the gRPC fast path", () => a.clients.suggestions],
  [
    "connect-node (Connect protocol)",
    () =>
      createClient(SuggestionService, createConnectTransport({ baseUrl: a.url, httpVersion: "2" })),
  ],
] as const;

describe.each(transports)("through %s", (_, client) => {
  test("start options: a lower permission, another model and an edited brief", async () => {
    for (const presetId of ["", "writer"]) {
      const sessionId = await session(a.clients, Permission.FULL_ACCESS, presetId);
      const offered = await offerOne(a.clients, sessionId, "Tidy the build");
      const res = await client().startSuggestion({
        sessionId,
        suggestionId: offered.id,
        options: { model: " small ", permission: Permission.READ_ONLY, brief: "  Only lint.  " },
      });
      const { chat } = await a.clients.local.getChat({ chatId: res.chatId });
      expect(chat?.settings).toMatchObject({ model: "small", permission: Permission.READ_ONLY });
      expect(chat?.messages.map((m) => [m.text, m.author, m.edited])).toEqual([
        ["Only lint.", MessageAuthor.SUGGESTION, true],
      ]);
      const expected = { model: "small", permission: Permission.READ_ONLY, brief: "Only lint." };
      expect(res.suggestion?.startOptions).toMatchObject(expected);
      const { settlements } = await client().listSettlements({ sessionId });
      expect(settlements[0]?.outcome).toBe(SettlementOutcome.STARTED);
      expect(settlements[0]?.startOptions).toMatchObject(expected);
      const started = (await logRecords(a.redis, sessionId)).find((r) => r.outcome === "started");
      expect(started).toMatchObject({ model: "small", perm: "read_only", brief: "Only lint." });
    }
  });

  test("a permission above the offering chat's is INVALID_ARGUMENT, nothing recorded", async () => {
    const sessionId = await session(a.clients, Permission.DEFAULT);
    const offered = await offerOne(a.clients, sessionId, "Raise it");
    const err = await connectErrorOf(
      client().startSuggestion({
        sessionId,
        suggestionId: offered.id,
        options: { permission: Permission.FULL_ACCESS },
      }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe(
      "start options: permission full_access is above the offering chat's default",
    );
    expect((await logRecords(a.redis, sessionId)).map((r) => r.type)).toEqual(["offered"]);
    const brief = await connectErrorOf(
      client().startSuggestion({
        sessionId,
        suggestionId: offered.id,
        options: { brief: "x".repeat(4001) },
      }),
    );
    expect([brief.code, brief.rawMessage]).toEqual([
      Code.InvalidArgument,
      "start options: brief must be at most 4000 characters (got 4001)",
    ]);
  });

  test("a dismissal's reason and note are recorded and returned; a repeat records nothing", async () => {
    const sessionId = await session(a.clients);
    const offered = await offerOne(a.clients, sessionId, "Add retries");
    const res = await client().dismissSuggestion({
      sessionId,
      suggestionId: offered.id,
      reason: DismissReason.ALREADY_DONE,
      note: "  done in #12 ",
    });
    expect(res.suggestion).toMatchObject({
      state: SuggestionState.DISMISSED,
      dismissReason: DismissReason.ALREADY_DONE,
      dismissNote: "done in #12",
    });
    const again = await client().dismissSuggestion({
      sessionId,
      suggestionId: offered.id,
      reason: DismissReason.OTHER,
    });
    expect(again.suggestion?.dismissReason).toBe(DismissReason.ALREADY_DONE);
    const settled = (await logRecords(a.redis, sessionId)).filter((r) => r.type === "settled");
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ why: "already_done", note: "done in #12" });
    const { settlements } = await client().listSettlements({ sessionId });
    expect(settlements[0]).toMatchObject({
      dismissReason: DismissReason.ALREADY_DONE,
      dismissNote: "done in #12",
    });
    const long = await connectErrorOf(
      client().dismissSuggestion({ sessionId, suggestionId: offered.id, note: "é".repeat(241) }),
    );
    expect([long.code, long.rawMessage]).toEqual([
      Code.InvalidArgument,
      "dismiss: note must be at most 240 characters (got 241)",
    ]);
  });

  test("a permission above the offering chat's, with a preset and without: each word of the enum", async () => {
    for (const presetId of ["", "writer"]) {
      for (const [own, asked, message] of [
        [
          Permission.READ_ONLY,
          Permission.DEFAULT,
          "permission default is above the offering chat's read_only",
        ],
        [
          Permission.READ_ONLY,
          Permission.FULL_ACCESS,
          "permission full_access is above the offering chat's read_only",
        ],
      ] as const) {
        const sessionId = await session(a.clients, own, presetId);
        const offered = await offerOne(a.clients, sessionId, "Raise it");
        const err = await connectErrorOf(
          client().startSuggestion({
            sessionId,
            suggestionId: offered.id,
            options: { permission: asked },
          }),
        );
        expect([err.code, err.rawMessage]).toEqual([
          Code.InvalidArgument,
          `start options: ${message}`,
        ]);
        expect((await logRecords(a.redis, sessionId)).map((r) => r.type)).toEqual(["offered"]);
        // The same permission as the offering chat's is not above it.
        const same = await client().startSuggestion({
          sessionId,
          suggestionId: offered.id,
          options: { permission: own },
        });
        const { chat } = await a.clients.local.getChat({ chatId: same.chatId });
        expect(chat?.settings?.permission).toBe(own);
      }
    }
  });

  test("start options on Get and List; no edit posts the offer's brief, not marked edited", async () => {
    const sessionId = await session(a.clients, Permission.FULL_ACCESS);
    const edited = await offerOne(a.clients, sessionId, "Edit me");
    const plain = await offerOne(a.clients, sessionId, "Leave me");
    await client().startSuggestion({
      sessionId,
      suggestionId: edited.id,
      options: { permission: Permission.DEFAULT, brief: "Mine" },
    });
    const res = await client().startSuggestion({ sessionId, suggestionId: plain.id });
    expect(res.suggestion?.startOptions).toBeUndefined();
    const { chat } = await a.clients.local.getChat({ chatId: res.chatId });
    expect(chat?.messages.map((m) => [m.text, m.author, m.edited])).toEqual([
      [plain.brief, MessageAuthor.SUGGESTION, false],
    ]);
    const got = await client().getSuggestion({ sessionId, suggestionId: edited.id });
    expect(got.suggestion?.startOptions).toMatchObject({
      model: "",
      permission: Permission.DEFAULT,
      brief: "Mine",
    });
    const { settled } = await client().listSuggestions({ sessionId });
    expect(settled.map((s) => s.startOptions?.brief)).toEqual(["Mine", undefined]);
  });

  test("start options refused before anything is recorded: an empty edit, a NUL, an unknown permission", async () => {
    const sessionId = await session(a.clients);
    const offered = await offerOne(a.clients, sessionId, "Refuse it");
    for (const [options, message] of [
      [{ brief: " \n " }, "start options: brief must not be empty"],
      [{ brief: "\u200b\u3164\u2800" }, "start options: brief must not be empty"],
      [{ brief: "Do it.\0" }, "start options: brief must not contain control characters"],
      [{ permission: 7 as Permission }, "start options: permission 7 is not a known permission"],
    ] as const) {
      const err = await connectErrorOf(
        client().startSuggestion({ sessionId, suggestionId: offered.id, options }),
      );
      expect([err.code, err.rawMessage]).toEqual([Code.InvalidArgument, message]);
    }
    expect((await logRecords(a.redis, sessionId)).map((r) => r.type)).toEqual(["offered"]);
  });

  test("a dismissal's reason and note on Get and List; a note of 240 fits; an unknown reason is refused", async () => {
    const sessionId = await session(a.clients);
    const offered = await offerOne(a.clients, sessionId, "Note it");
    const unknown = await connectErrorOf(
      client().dismissSuggestion({
        sessionId,
        suggestionId: offered.id,
        reason: 9 as DismissReason,
      }),
    );
    expect([unknown.code, unknown.rawMessage]).toEqual([
      Code.InvalidArgument,
      "dismiss: reason 9 is not a known reason",
    ]);
    const note = "é".repeat(240);
    await client().dismissSuggestion({
      sessionId,
      suggestionId: offered.id,
      reason: DismissReason.NOT_WANTED,
      note,
    });
    const expected = { dismissReason: DismissReason.NOT_WANTED, dismissNote: note };
    const got = await client().getSuggestion({ sessionId, suggestionId: offered.id });
    expect(got.suggestion).toMatchObject(expected);
    expect((await client().listSuggestions({ sessionId })).settled[0]).toMatchObject(expected);
    // Restored, it carries no reason any more.
    const restored = await client().restoreSuggestion({ sessionId, suggestionId: offered.id });
    expect(restored.suggestion).toMatchObject({
      dismissReason: DismissReason.UNSPECIFIED,
      dismissNote: "",
    });
  });

  test("duplicates: open, dismissed by the person; withdrawn ones and restored ones", async () => {
    const sessionId = await session(a.clients);
    const first = await offerOne(a.clients, sessionId, "Add retries");
    const call = (title: string) =>
      client().suggestTask({
        context: { sessionId, turnId: uniqueId("turn"), role: AgentRole.TOP_LEVEL },
        args: { title, tldr: "t", brief: "b" },
      });
    const open = await connectErrorOf(call("  add   RETRIES "));
    expect([open.code, open.rawMessage]).toEqual([
      Code.AlreadyExists,
      'suggest_task: "add   RETRIES" already waits for the user; offer something else',
    ]);
    const refusal = open.findDetails(SuggestTaskRefusalSchema)[0];
    expect(refusal).toMatchObject({ reason: RefusalReason.DUPLICATE_OPEN, field: "", limit: 0 });
    expect(open.findDetails(ErrorInfoSchema)[0]).toMatchObject({
      domain: "suggest_task",
      reason: "DUPLICATE_OPEN",
    });
    await client().dismissSuggestion({ sessionId, suggestionId: first.id });
    const dismissed = await connectErrorOf(call("add retries"));
    expect([dismissed.code, dismissed.rawMessage]).toEqual([
      Code.AlreadyExists,
      'suggest_task: the user dismissed "add retries"; do not offer it again',
    ]);
    expect(dismissed.findDetails(SuggestTaskRefusalSchema)[0]?.reason).toBe(
      RefusalReason.DUPLICATE_DISMISSED,
    );
    expect(dismissed.findDetails(ErrorInfoSchema)[0]?.reason).toBe("DUPLICATE_DISMISSED");
    await client().restoreSuggestion({ sessionId, suggestionId: first.id });
    expect((await connectErrorOf(call("Add retries"))).code).toBe(Code.AlreadyExists);
    // Withdrawn by the agent: no longer counts.
    await client().withdrawSuggestion({
      context: { sessionId, turnId: uniqueId("turn"), role: AgentRole.TOP_LEVEL },
      args: { title: "Add retries", reason: "did it" },
    });
    expect((await call("Add retries")).suggestion?.title).toBe("Add retries");
    expect((await logRecords(a.redis, sessionId)).filter((r) => r.type === "offered")).toHaveLength(
      2,
    );
  });
});

test("20 concurrent Starts with 20 options over two instances: one chat, one caller's options", async () => {
  const sessionId = await session(a.clients, Permission.FULL_ACCESS);
  const offered = await offerOne(a.clients, sessionId, "Port the tests");
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? a : b).clients.suggestions.startSuggestion({
        sessionId,
        suggestionId: offered.id,
        options: { model: `model-${i}`, brief: `Brief ${i}` },
      }),
    ),
  );
  const chatId = answers[0]?.chatId;
  expect(new Set(answers.map((r) => r.chatId))).toEqual(new Set([chatId]));
  const { chat } = await a.clients.local.getChat({ chatId: chatId ?? "" });
  const model = chat?.settings?.model ?? "";
  const i = Number(model.replace("model-", ""));
  expect(model).toMatch(/^model-\d+$/);
  expect(chat?.messages.map((m) => m.text)).toEqual([`Brief ${i}`]);
  for (const r of answers) {
    expect(r.suggestion?.startOptions).toMatchObject({ model, brief: `Brief ${i}` });
  }
  const records = await logRecords(a.redis, sessionId);
  expect(records.filter((r) => r.type === "starting")).toHaveLength(1);
  expect(records.filter((r) => r.outcome === "started")).toEqual([
    expect.objectContaining({ model, brief: `Brief ${i}` }),
  ]);
});

test("settlementNotes speaks every reason in the pinned words, a note after it, none without a reason", async () => {
  const { settlementNotes } = await import("../../sdk/src/settlement-notes.js");
  const sessionId = await session(a.clients);
  const s = a.clients.suggestions;
  const dismissals = [
    ["Add retries", DismissReason.ALREADY_DONE, "done in #12"],
    ["Bump deps", DismissReason.DUPLICATE, ""],
    ["Port it", DismissReason.NOT_WANTED, ""],
    ["Tidy up", DismissReason.OTHER, "later"],
    ["Rename it", DismissReason.UNSPECIFIED, "no reason given"],
  ] as const;
  for (const [title, reason, note] of dismissals) {
    const offered = await offerOne(a.clients, sessionId, title);
    await s.dismissSuggestion({ sessionId, suggestionId: offered.id, reason, note });
    // Three open at most: each is dismissed before the next is offered.
  }
  const { settlements } = await s.listSettlements({ sessionId });
  expect(settlementNotes(settlements)).toEqual([
    'The user dismissed your suggestion "Add retries" as already done; do not offer it again. Their note: done in #12',
    'The user dismissed your suggestion "Bump deps" as a duplicate; do not offer it again.',
    'The user dismissed your suggestion "Port it" as not wanted; do not offer it again.',
    'The user dismissed your suggestion "Tidy up" as other; do not offer it again. Their note: later',
    'The user dismissed your suggestion "Rename it"; do not offer it again.',
  ]);
});
