import { execFileSync } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AgentRole,
  anthropicTool,
  callSuggestTaskTool,
  callWithdrawSuggestionTool,
  createLocalHostClient,
  createSuggestionClient,
  type LocalHostClient,
  mcpTool,
  openAITool,
  RefusalReason,
  readWithdrawSuggestionArguments,
  SettlementOutcome,
  SettlementSchema,
  Settler,
  type SuggestionClient,
  SuggestionState,
  settlementNotes,
  toolDefinition,
  WithdrawSuggestionArgsSchema,
  withdrawSuggestionTool,
} from "../../sdk/src/node.js";
import {
  withdrawSuggestionTool as serverSpec,
  toolSpecOf,
} from "../../server/domain/tool-declaration.js";
import { checkToolFields } from "../../server/domain/tool-fields.js";
import type { SuggestServer } from "../../server/server.js";
import { startTestServer, tempDir, uniqueId } from "../support/harness.js";

/** The contract's texts of withdraw_suggestion, copied exactly. */
const DESIGN = {
  tool: "Withdraw a follow-up you offered earlier in this chat that is no longer worth starting, for example because you did it here.",
  title: "The title of the suggestion to withdraw, exactly as you offered it.",
  reason: "Why it is no longer worth starting, at most 240 characters.",
} as const;

const SCHEMA = {
  type: "object",
  properties: {
    title: { type: "string", description: DESIGN.title, maxLength: 60 },
    reason: { type: "string", description: DESIGN.reason, maxLength: 240 },
  },
  required: ["title", "reason"],
  additionalProperties: false,
};

describe("the withdraw_suggestion tool, read from the proto's options", () => {
  test("its name, description and schema, for Anthropic, OpenAI and MCP", () => {
    expect(withdrawSuggestionTool).toEqual({
      name: "withdraw_suggestion",
      description: DESIGN.tool,
      inputSchema: SCHEMA,
    });
    expect(anthropicTool(withdrawSuggestionTool)).toEqual({
      name: "withdraw_suggestion",
      description: DESIGN.tool,
      input_schema: SCHEMA,
    });
    expect(openAITool(withdrawSuggestionTool)).toEqual({
      type: "function",
      function: { name: "withdraw_suggestion", description: DESIGN.tool, parameters: SCHEMA },
    });
    expect(mcpTool(withdrawSuggestionTool)).toEqual({
      name: "withdraw_suggestion",
      description: DESIGN.tool,
      inputSchema: SCHEMA,
    });
    expect(serverSpec).toEqual(toolSpecOf(WithdrawSuggestionArgsSchema));
  });

  test("changing nothing but the proto option changes the schema and the service's limit", () => {
    const { dir, remove } = tempDir("sdk-withdraw-proto");
    try {
      cpSync("proto", join(dir, "proto"), { recursive: true });
      cpSync("buf.yaml", join(dir, "buf.yaml"));
      const file = join(dir, "proto/oda/suggest/v1/suggestion.proto");
      const original = readFileSync(file, "utf8");
      const edited = original.replace(
        `description: "${DESIGN.reason}"\n    max_code_points: 240`,
        'description: "Why, briefly."\n    max_code_points: 20',
      );
      expect(edited).not.toBe(original);
      writeFileSync(file, edited);
      const image = join(dir, "image.binpb");
      execFileSync("node_modules/.bin/buf", ["build", dir, "-o", image]);
      const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(image)));
      const args = registry.getMessage("oda.suggest.v1.WithdrawSuggestionArgs");
      if (args === undefined) throw new Error("no WithdrawSuggestionArgs in the image");
      expect(toolDefinition(args).inputSchema.properties.reason).toEqual({
        type: "string",
        description: "Why, briefly.",
        maxLength: 20,
      });
      const fields = { title: "T", reason: "x".repeat(21) };
      expect(checkToolFields(fields, toolSpecOf(args))).toEqual({
        reason: RefusalReason.FIELD_TOO_LONG,
        field: "reason",
        limit: 20,
        got: 21,
      });
      expect(checkToolFields(fields, serverSpec)).toBeUndefined();
    } finally {
      remove();
    }
  });

  test("its arguments: an object or its JSON text; missing ones empty; wrong types refused", () => {
    expect(readWithdrawSuggestionArguments({ title: "T", reason: "R", x: 1 })).toEqual({
      title: "T",
      reason: "R",
    });
    expect(readWithdrawSuggestionArguments('{"title":"T"}')).toEqual({ title: "T", reason: "" });
    const err = (() => {
      try {
        readWithdrawSuggestionArguments({ title: 5 });
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: "withdraw_suggestion: title must be a string",
    });
    expect(() => readWithdrawSuggestionArguments("{oops")).toThrow(
      "withdraw_suggestion: the arguments are not valid JSON",
    );
  });
});

describe("settlementNotes", () => {
  const settlement = (outcome: SettlementOutcome, settledBy = Settler.PERSON) =>
    create(SettlementSchema, { outcome, settledBy, suggestion: { title: "Fix CI" } });

  test("the contract's line per outcome, in order; an unknown outcome adds none", () => {
    expect(
      settlementNotes([
        settlement(SettlementOutcome.STARTED),
        settlement(SettlementOutcome.DRAFTED),
        settlement(SettlementOutcome.DISMISSED),
        settlement(SettlementOutcome.DISMISSED, Settler.AGENT),
        settlement(SettlementOutcome.RESTORED),
        settlement(SettlementOutcome.UNSPECIFIED),
        settlement(9 as SettlementOutcome),
      ]),
    ).toEqual([
      'The user started your suggestion "Fix CI" as a new chat.',
      'The user saved your suggestion "Fix CI" as a draft.',
      'The user dismissed your suggestion "Fix CI"; do not offer it again.',
      'You withdrew your suggestion "Fix CI".',
      'The user restored your suggestion "Fix CI"; it waits again.',
    ]);
    expect(settlementNotes([])).toEqual([]);
  });
});

describe("callWithdrawSuggestionTool against a real server", () => {
  let server: SuggestServer;
  let client: SuggestionClient;
  let local: LocalHostClient;
  beforeAll(async () => {
    server = await startTestServer();
    client = createSuggestionClient({ baseUrl: server.url });
    local = createLocalHostClient({ baseUrl: server.url });
  });
  afterAll(() => server.close());

  test("withdraws, answers a retry the same, refuses what the contract refuses", async () => {
    const sessionId = uniqueId("sdk-withdraw");
    await local.putSession({ session: { sessionId, workspaceId: "ws-1" } });
    const context = { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL, toolCallId: "call-o" };
    await callSuggestTaskTool(client, { title: "Add retries", tldr: "W", brief: "B" }, context);

    const call = { ...context, turnId: "t2", toolCallId: "call-w" };
    const input = JSON.stringify({ title: " Add retries ", reason: "Done here." });
    const result = await callWithdrawSuggestionTool(client, input, call);
    expect(result).toMatchObject({
      isError: false,
      content: 'Withdrew "Add retries". It stays dismissed unless the user restores it.',
      suggestion: {
        title: "Add retries",
        state: SuggestionState.DISMISSED,
        settledBy: Settler.AGENT,
      },
    });
    expect(await callWithdrawSuggestionTool(client, input, call)).toEqual(result);

    const again = await callWithdrawSuggestionTool(client, input, { ...call, toolCallId: "c2" });
    expect(again).toMatchObject({
      isError: true,
      content: 'withdraw_suggestion: no open suggestion is titled "Add retries"',
      refusal: { reason: RefusalReason.NO_OPEN_OFFER },
    });
    const helper = await callWithdrawSuggestionTool(client, input, {
      ...call,
      role: AgentRole.HELPER,
    });
    expect(helper).toMatchObject({
      isError: true,
      content: "withdraw_suggestion is only for the top-level agent.",
      refusal: { reason: RefusalReason.NOT_TOP_LEVEL },
    });
    const { settlements } = await client.listSettlements({ sessionId, after: "" });
    expect(settlementNotes(settlements)).toEqual(['You withdrew your suggestion "Add retries".']);
  });
});
