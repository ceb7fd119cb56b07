import { execFile } from "node:child_process";
import http2 from "node:http2";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";
import { describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { RefusalReason, SuggestTaskRefusalSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer, REFUSAL_TEXT, successText } from "../support/suggest.js";

const run = promisify(execFile);

// Every test here runs against both gRPC paths: the fast path and connect-node.
describe.each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("through %s", (_, grpcFastPath) => {
  const t = useTestServer({ settings: { grpcFastPath } });

  test("gRPC calls take the path configured", async () => {
    const session = http2.connect(t.server.url);
    const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/oda.suggest.v1.SuggestionService/ListSuggestions",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("response", resolve);
      stream.on("error", reject);
      stream.on("data", () => {});
      stream.end(Buffer.from([0, 0, 0, 0, 3, 0x0a, 1, 0x73]));
    });
    session.close();
    // The fast path names the one encoding it accepts; connect-node (no compression set) none.
    expect(headers["grpc-accept-encoding"]).toBe(grpcFastPath ? "identity" : undefined);
  });

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

  describe("a @grpc/grpc-js client that loads the proto files at run time", () => {
    const protoFiles = [
      "oda/suggest/v1/suggestion_service.proto",
      "oda/suggest/v1/chat_host.proto",
    ];
    const includeDirs = ["proto", "test/fixtures"];
    const definition = protoLoader.loadSync(protoFiles, {
      includeDirs,
      keepCase: true,
      enums: String,
      longs: String,
      defaults: true,
      oneofs: true,
    });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as {
      oda: { suggest: { v1: Record<string, grpc.ServiceClientConstructor> } };
    };
    // Decoding the details needs only protobufjs and the same files, no generated code.
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => {
      for (const dir of includeDirs) {
        const path = `${dir}/${target}`;
        try {
          require.resolve(`../../${path}`);
          return path;
        } catch {}
      }
      return target;
    };
    root.loadSync([...protoFiles, "google/rpc/status.proto", "google/rpc/error_details.proto"], {
      keepCase: true,
    });

    function decodeDetails(err: grpc.ServiceError): Record<string, unknown>[] {
      const bin = err.metadata.get("grpc-status-details-bin")[0] as Buffer;
      const status = root.lookupType("google.rpc.Status").decode(bin) as unknown as {
        details: { type_url: string; value: Uint8Array }[];
      };
      return status.details.map((any) => {
        const type = root.lookupType(any.type_url.slice(any.type_url.lastIndexOf("/") + 1));
        return {
          type: type.fullName.slice(1),
          ...type.toObject(type.decode(any.value), { enums: String, defaults: true }),
        };
      });
    }

    function unary<Req, Res>(client: grpc.Client, method: string, request: Req): Promise<Res> {
      return new Promise((resolve, reject) => {
        const fn = (client as unknown as Record<string, (...args: unknown[]) => void>)[method];
        if (fn === undefined) throw new Error(`no method ${method}`);
        fn.call(client, request, (err: grpc.ServiceError | null, res: Res) =>
          err ? reject(err) : resolve(res),
        );
      });
    }

    test("offers and starts a suggestion, and reads SuggestionError and ErrorInfo", async () => {
      const address = t.server.url.replace("http://", "");
      const Suggestions = loaded.oda.suggest.v1.SuggestionService as grpc.ServiceClientConstructor;
      const Local = loaded.oda.suggest.v1.LocalHostService as grpc.ServiceClientConstructor;
      const suggestions = new Suggestions(address, grpc.credentials.createInsecure());
      const local = new Local(address, grpc.credentials.createInsecure());
      try {
        const sessionId = uniqueId();
        await unary(local, "PutSession", {
          session: { session_id: sessionId, workspace_id: "ws", folder: "FOLDER_KIND_NORMAL" },
        });
        const offered = await unary<unknown, { suggestion: { id: string }; result: string }>(
          suggestions,
          "SuggestTask",
          {
            context: { session_id: sessionId, turn_id: "t1", role: "AGENT_ROLE_TOP_LEVEL" },
            args: { title: "From grpc-js", tldr: "r", brief: "b" },
          },
        );
        expect(offered.result).toBe(successText("From grpc-js"));
        const started = await unary<unknown, { chat_id: string; suggestion: { state: string } }>(
          suggestions,
          "StartSuggestion",
          {
            session_id: sessionId,
            suggestion_id: offered.suggestion.id,
          },
        );
        expect(started.chat_id).not.toBe("");
        expect(started.suggestion.state).toBe("SUGGESTION_STATE_STARTED");

        const notOpen = await unary(suggestions, "DismissSuggestion", {
          session_id: sessionId,
          suggestion_id: offered.suggestion.id,
        }).catch((e: grpc.ServiceError) => e);
        expect((notOpen as grpc.ServiceError).code).toBe(grpc.status.FAILED_PRECONDITION);
        expect((notOpen as grpc.ServiceError).details).toBe(
          `suggestion "${offered.suggestion.id}" is started`,
        );
        expect(decodeDetails(notOpen as grpc.ServiceError)).toEqual([
          {
            type: "oda.suggest.v1.SuggestionError",
            code: "task-suggestion/not-open",
            not_open: { suggestion_id: offered.suggestion.id, state: "SUGGESTION_STATE_STARTED" },
          },
          {
            type: "google.rpc.ErrorInfo",
            reason: "NOT_OPEN",
            domain: "task-suggestion",
            metadata: { suggestionId: offered.suggestion.id, state: "started" },
          },
        ]);

        const refused = await unary(suggestions, "SuggestTask", {
          context: { session_id: sessionId, turn_id: "t1", role: "AGENT_ROLE_HELPER" },
          args: { title: "x", tldr: "y", brief: "z" },
        }).catch((e: grpc.ServiceError) => e);
        expect((refused as grpc.ServiceError).details).toBe(REFUSAL_TEXT.helper);
        expect(decodeDetails(refused as grpc.ServiceError)).toEqual([
          {
            type: "oda.suggest.v1.SuggestTaskRefusal",
            reason: "REFUSAL_REASON_NOT_TOP_LEVEL",
            field: "",
            limit: 0,
            got: 0,
          },
          {
            type: "google.rpc.ErrorInfo",
            reason: "NOT_TOP_LEVEL",
            domain: "suggest_task",
            metadata: {},
          },
        ]);
      } finally {
        suggestions.close();
        local.close();
      }
    });
  });

  test("WatchSuggestions over gRPC: the lists at once, then after a change, until the client leaves", async () => {
    const { sessionId } = await chatWithOffer();
    const abort = new AbortController();
    const seen: number[] = [];
    const watching = (async () => {
      try {
        for await (const lists of t.clients.suggestions.watchSuggestions(
          { sessionId },
          { signal: abort.signal },
        )) {
          seen.push(lists.open.length);
          if (seen.length === 1) await offer(t.clients, { sessionId, turnId: "t-watch" });
          if (seen.length === 2) abort.abort();
        }
      } catch (err) {
        if (!abort.signal.aborted) throw err;
      }
    })();
    await watching;
    expect(seen).toEqual([1, 2]);
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
