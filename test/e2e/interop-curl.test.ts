import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { RefusalReason, SuggestTaskRefusalSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer, REFUSAL_TEXT, successText } from "../support/suggest.js";

/*
 * Interop with tools that know nothing of this project: `buf curl` through server
 * reflection (gRPC and Connect), and plain curl with Connect JSON. gRPC clients:
 * test/e2e/interop-grpc.test.ts.
 */

const run = promisify(execFile);

// Every test here runs against both gRPC paths: the fast path and connect-node.
describe.each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("through %s", (_, grpcFastPath) => {
  const t = useTestServer({ settings: { grpcFastPath } });

  /** The real `buf` binary of @bufbuild/buf, with the schema taken from server reflection. */
  async function bufCurl(args: string[]): Promise<{ ok: boolean; out: string }> {
    return run("node_modules/.bin/buf", ["curl", ...args], { encoding: "utf8" }).then(
      ({ stdout }) => ({ ok: true, out: stdout }),
      (err: { stdout: string; stderr: string }) => ({ ok: false, out: err.stderr }),
    );
  }

  async function chatWithOffer(): Promise<{ sessionId: string; suggestionId: string }> {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    const res = await offer(t.clients, { sessionId, turnId: "t0" });
    return { sessionId, suggestionId: res.suggestion?.id ?? "" };
  }

  describe("buf curl through server reflection (no --schema)", () => {
    test("--list-methods lists every service served", async () => {
      const { ok, out } = await bufCurl([
        "--protocol",
        "grpc",
        "--http2-prior-knowledge",
        "--list-methods",
        t.server.url,
      ]);
      expect(ok).toBe(true);
      for (const method of [
        "oda.suggest.v1.SuggestionService/SuggestTask",
        "oda.suggest.v1.SuggestionService/StartSuggestion",
        "oda.suggest.v1.LocalHostService/PutSession",
        "grpc.health.v1.Health/Check",
      ]) {
        expect(out.split("\n")).toContain(method);
      }
    });

    test.each([
      ["grpc", ["--protocol", "grpc", "--http2-prior-knowledge"]],
      ["connect", ["--protocol", "connect"]],
    ])(
      "SuggestTask, ListSuggestions and StartSuggestion over %s, and a refusal's typed details",
      async (_, protocol) => {
        const { sessionId, suggestionId } = await chatWithOffer();
        const url = (m: string) => `${t.server.url}/oda.suggest.v1.SuggestionService/${m}`;
        const context = { sessionId, turnId: "t1", role: "AGENT_ROLE_TOP_LEVEL" };
        const offered = await bufCurl([
          ...protocol,
          "-d",
          JSON.stringify({ context, args: { title: "Second", tldr: "r", brief: "b" } }),
          url("SuggestTask"),
        ]);
        expect(offered.ok).toBe(true);
        expect(JSON.parse(offered.out).result).toBe(successText("Second"));

        const listed = await bufCurl([
          ...protocol,
          "-d",
          JSON.stringify({ sessionId }),
          url("ListSuggestions"),
        ]);
        expect(JSON.parse(listed.out).open.map((s: { title: string }) => s.title)).toHaveLength(2);

        const started = await bufCurl([
          ...protocol,
          "-d",
          JSON.stringify({ sessionId, suggestionId }),
          url("StartSuggestion"),
        ]);
        expect(started.ok).toBe(true);
        expect(JSON.parse(started.out)).toMatchObject({
          chatId: expect.any(String),
          suggestion: { state: "SUGGESTION_STATE_STARTED" },
        });

        const refused = await bufCurl([
          ...protocol,
          "-d",
          JSON.stringify({ context, args: { title: "Third", tldr: "r", brief: "b" } }),
          url("SuggestTask"),
        ]);
        expect(refused.ok).toBe(false);
        const error = JSON.parse(refused.out) as {
          code: string;
          message: string;
          details: { type: string; value: string }[];
        };
        expect(error.code).toBe("resource_exhausted");
        expect(error.message).toBe(REFUSAL_TEXT.turn);
        expect(error.details.map((d) => d.type)).toEqual([
          "oda.suggest.v1.SuggestTaskRefusal",
          "google.rpc.ErrorInfo",
        ]);
        const bytes = (d: { value: string } | undefined) => Buffer.from(d?.value ?? "", "base64");
        expect(fromBinary(SuggestTaskRefusalSchema, bytes(error.details[0]))).toMatchObject({
          reason: RefusalReason.TURN_LIMIT,
          limit: 1,
        });
        expect(fromBinary(ErrorInfoSchema, bytes(error.details[1]))).toMatchObject({
          reason: "TURN_LIMIT",
          domain: "suggest_task",
          metadata: { limit: "1" },
        });
      },
    );
  });

  test("plain curl over HTTP/1.1 with Connect JSON lists suggestions", async () => {
    const { sessionId } = await chatWithOffer();
    const { stdout } = await run("curl", [
      "--silent",
      "--http1.1",
      "-H",
      "content-type: application/json",
      "-d",
      JSON.stringify({ sessionId }),
      `${t.server.url}/oda.suggest.v1.SuggestionService/ListSuggestions`,
    ]);
    const body = JSON.parse(stdout);
    expect(body.open).toHaveLength(1);
    expect(body.open[0]).toMatchObject({ sessionId, turnId: "t0", state: "SUGGESTION_STATE_OPEN" });
  });
});
