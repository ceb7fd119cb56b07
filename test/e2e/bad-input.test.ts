import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, test } from "vitest";
import { AgentRole, RefusalReason } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { rawGrpc } from "../support/raw-grpc.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";
import { expectRefusal, offer, refusalOf } from "../support/suggest.js";

// A Redis of this file's own, so that "nothing recorded" is an exact count of keys.
const own = useOwnRedis();
const t = useTestServer({ redisUrl: () => own.url });
let sessionId: string;

beforeAll(async () => {
  sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
});

/** Runs a bad call; expects its code and message, no new key, and a server that still serves. */
async function expectClean(call: () => Promise<unknown>, code: Code, message: string | RegExp) {
  const before = await t.redis.dbsize();
  const err = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  expect(Code[(err as ConnectError).code]).toBe(Code[code]);
  if (typeof message === "string") expect((err as ConnectError).rawMessage).toBe(message);
  else expect((err as ConnectError).rawMessage).toMatch(message);
  expect(await t.redis.dbsize()).toBe(before);
  const ok = await offer(t.clients, { sessionId: await freshSession() });
  expect(ok.result).toMatch(/^Suggested "/);
}

async function freshSession(): Promise<string> {
  const id = uniqueId();
  await putSession(t.clients, { sessionId: id });
  return id;
}

const ID_RULE = "1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'";

describe("malformed requests answer INVALID_ARGUMENT and record nothing", () => {
  test.each([
    ["white space", "bad id"],
    ["a hash tag", "a{b}c"],
    ["a glob", "*"],
    ["too long", "x".repeat(129)],
    ["non-ASCII", "séance"],
    ["a newline", "a\nb"],
  ])("a session id with %s", async (_, id) => {
    await expectClean(
      () => offer(t.clients, { sessionId: id }),
      Code.InvalidArgument,
      `context.session_id must be ${ID_RULE}`,
    );
  });

  test("a malformed id comes before every rule, even the helper refusal", async () => {
    await expectClean(
      () => offer(t.clients, { sessionId: "no good", role: AgentRole.HELPER, turnId: "" }),
      Code.InvalidArgument,
      `context.session_id must be ${ID_RULE}`,
    );
  });

  test("a missing context", async () => {
    await expectClean(
      () => t.clients.suggestions.suggestTask({ args: { title: "a", tldr: "b", brief: "c" } }),
      Code.InvalidArgument,
      "context is required",
    );
  });

  test("malformed turn and tool call ids", async () => {
    await expectClean(
      () => offer(t.clients, { sessionId, turnId: "turn 1" }),
      Code.InvalidArgument,
      /^context\.turn_id must be/,
    );
    await expectClean(
      () => offer(t.clients, { sessionId, toolCallId: "c".repeat(257) }),
      Code.InvalidArgument,
      /^context\.tool_call_id must be/,
    );
  });

  test("missing arguments get the contract's refusal", async () => {
    const id = await freshSession();
    expectRefusal(
      await refusalOf(
        t.clients.suggestions.suggestTask({
          context: { sessionId: id, turnId: "t", role: AgentRole.TOP_LEVEL },
        }),
      ),
      {
        message: "suggest_task: title must not be empty",
        code: Code.InvalidArgument,
        reason: RefusalReason.FIELD_EMPTY,
        field: "title",
        limit: 60,
      },
    );
  });
});

describe("text that is not valid UTF-8", () => {
  test("over gRPC: INVALID_ARGUMENT, nothing recorded", async () => {
    const before = await t.redis.dbsize();
    // SuggestTaskRequest { context: { session_id, turn_id, role: TOP_LEVEL }, args: { title: 0xff 0xfe } }
    const text = (tag: number, bytes: Buffer) =>
      Buffer.concat([Buffer.from([tag, bytes.length]), bytes]);
    const context = Buffer.concat([
      text(0x0a, Buffer.from(sessionId)),
      text(0x12, Buffer.from("t-utf8")),
      Buffer.from([0x18, 0x01]),
    ]);
    const args = Buffer.concat([
      text(0x0a, Buffer.from([0x66, 0xff, 0xfe])),
      text(0x12, Buffer.from("b")),
      text(0x1a, Buffer.from("c")),
    ]);
    const request = Buffer.concat([text(0x0a, context), text(0x12, args)]);
    const answer = await rawGrpc(
      t.server.url,
      "/oda.suggest.v1.SuggestionService/SuggestTask",
      request,
    );
    expect({ code: answer.code, message: answer.message }).toEqual({
      code: Code.InvalidArgument,
      message: "args.title is not valid UTF-8",
    });
    expect(await t.redis.dbsize()).toBe(before);
  });

  test("over Connect JSON, a lone surrogate escape: INVALID_ARGUMENT", async () => {
    const res = await fetch(`${t.server.url}/oda.suggest.v1.SuggestionService/SuggestTask`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"context":{"sessionId":"${sessionId}","turnId":"t-json","role":"AGENT_ROLE_TOP_LEVEL"},"args":{"title":"a\\ud800","tldr":"b","brief":"c"}}`,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: "invalid_argument",
      message:
        "cannot decode field oda.suggest.v1.SuggestTaskArgs.title from JSON: expected string: invalid UTF8",
    });
  });
});

describe("oversized requests", () => {
  test("a brief over its limit gets the contract's refusal", async () => {
    const id = await freshSession();
    expect(
      (await refusalOf(offer(t.clients, { sessionId: id, brief: "x".repeat(5000) }))).message,
    ).toBe("suggest_task: brief must be at most 4000 characters (got 5000)");
  });

  test("a request over the size bound is refused before it is parsed", async () => {
    // gRPC's code for a message over the receiver's limit is RESOURCE_EXHAUSTED.
    await expectClean(
      () => offer(t.clients, { sessionId, brief: "x".repeat(300 * 1024) }),
      Code.ResourceExhausted,
      /larger than configured readMaxBytes 262144/,
    );
  });
});
