import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, test } from "vitest";
import { decodeStatusDetails, grpcJsClients, grpcJsUnary } from "../support/grpc-js.js";
import { uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer, REFUSAL_TEXT, sessionWithOffers, successText } from "../support/suggest.js";

/*
 * Interop over gRPC: the path a call takes, a @grpc/grpc-js client reading the typed
 * details, a server stream. buf curl and plain curl: test/e2e/interop-curl.test.ts.
 */

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

  describe("a @grpc/grpc-js client that loads the proto files at run time", () => {
    test("offers and starts a suggestion, and reads SuggestionError and ErrorInfo", async () => {
      const clients = grpcJsClients(t.server.url);
      const { suggestions, local } = clients;
      try {
        const sessionId = uniqueId();
        await grpcJsUnary(local, "PutSession", {
          session: { session_id: sessionId, workspace_id: "ws", folder: "FOLDER_KIND_NORMAL" },
        });
        const offered = await grpcJsUnary<{ suggestion: { id: string }; result: string }>(
          suggestions,
          "SuggestTask",
          {
            context: { session_id: sessionId, turn_id: "t1", role: "AGENT_ROLE_TOP_LEVEL" },
            args: { title: "From grpc-js", tldr: "r", brief: "b" },
          },
        );
        expect(offered.result).toBe(successText("From grpc-js"));
        const started = await grpcJsUnary<{ chat_id: string; suggestion: { state: string } }>(
          suggestions,
          "StartSuggestion",
          {
            session_id: sessionId,
            suggestion_id: offered.suggestion.id,
          },
        );
        expect(started.chat_id).not.toBe("");
        expect(started.suggestion.state).toBe("SUGGESTION_STATE_STARTED");

        const notOpen = await grpcJsUnary(suggestions, "DismissSuggestion", {
          session_id: sessionId,
          suggestion_id: offered.suggestion.id,
        }).catch((e: grpc.ServiceError) => e);
        expect((notOpen as grpc.ServiceError).code).toBe(grpc.status.FAILED_PRECONDITION);
        expect((notOpen as grpc.ServiceError).details).toBe(
          `suggestion "${offered.suggestion.id}" is started`,
        );
        expect(decodeStatusDetails(notOpen as grpc.ServiceError)).toEqual([
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

        const refused = await grpcJsUnary(suggestions, "SuggestTask", {
          context: { session_id: sessionId, turn_id: "t1", role: "AGENT_ROLE_HELPER" },
          args: { title: "x", tldr: "y", brief: "z" },
        }).catch((e: grpc.ServiceError) => e);
        expect((refused as grpc.ServiceError).details).toBe(REFUSAL_TEXT.helper);
        expect(decodeStatusDetails(refused as grpc.ServiceError)).toEqual([
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
        clients.close();
      }
    });
  });

  test("WatchSuggestions over gRPC: the lists at once, then after a change, until the client leaves", async () => {
    const { sessionId } = await sessionWithOffers(t.clients, "Watched");
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
});
