import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { SuggestServer } from "../../server/server.js";
import { grpcJsClients, grpcJsStream, grpcJsUnary } from "../support/grpc-js.js";
import {
  sharedRedisUrl,
  spawnService,
  startTestServer,
  tempDir,
  uniqueId,
} from "../support/harness.js";
import { rawGrpc } from "../support/raw-grpc.js";
import { successText } from "../support/suggest.js";
import { hasOpenssl, selfSignedCert } from "../support/tls-cert.js";

const run = promisify(execFile);

describe.skipIf(!hasOpenssl).each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("with TLS_CERT_FILE and TLS_KEY_FILE, through %s", (_, grpcFastPath) => {
  let dir: ReturnType<typeof tempDir>;
  let cert: string;
  let server: SuggestServer;
  beforeAll(async () => {
    dir = tempDir("tls");
    const files = await selfSignedCert(dir.dir);
    cert = files.cert;
    server = await startTestServer(sharedRedisUrl(), {
      tlsCertFile: files.cert,
      tlsKeyFile: files.key,
      grpcFastPath,
    });
  });
  afterAll(async () => {
    await server?.close();
    dir?.remove();
  });

  test("it serves gRPC over TLS", async () => {
    expect(server.url).toMatch(/^https:\/\//);
    const transport = createGrpcTransport({
      baseUrl: server.url,
      nodeOptions: { ca: readFileSync(cert) },
    });
    const res = await createClient(SuggestionService, transport).listSuggestions({
      sessionId: uniqueId(),
    });
    expect(res.open).toEqual([]);
    const viaCurl = await run("curl", [
      "--silent",
      "--cacert",
      cert,
      "-H",
      "content-type: application/json",
      "-d",
      "{}",
      `${server.url}/grpc.health.v1.Health/Check`,
    ]);
    expect(JSON.parse(viaCurl.stdout)).toEqual({ status: "SERVING" });
  });

  test("binary gRPC over h2 (ALPN) takes the path configured", async () => {
    // Over TLS, node's HTTP/2 client offers only "h2" by ALPN and fails without it.
    const { code, headers } = await rawGrpc(
      server.url,
      "/oda.suggest.v1.SuggestionService/ListSuggestions",
      Buffer.from([0x0a, 1, 0x73]),
      {},
      { ca: readFileSync(cert) },
    );
    expect(code).toBe(0);
    // The fast path names the one encoding it accepts; connect-node (no compression set) none.
    expect(headers["grpc-accept-encoding"]).toBe(grpcFastPath ? "identity" : undefined);
  });

  test("grpc-js with the test certificate: unary calls and a watch stream", async () => {
    const js = grpcJsClients(server.url, readFileSync(cert));
    try {
      const sessionId = uniqueId();
      await grpcJsUnary(js.local, "PutSession", {
        session: { session_id: sessionId, workspace_id: "ws", folder: "FOLDER_KIND_NORMAL" },
      });
      const offer = (turn: string, title: string) =>
        grpcJsUnary<{ result: string }>(js.suggestions, "SuggestTask", {
          context: { session_id: sessionId, turn_id: turn, role: "AGENT_ROLE_TOP_LEVEL" },
          args: { title, tldr: "r", brief: "b" },
        });
      expect((await offer("t1", "Over TLS")).result).toBe(successText("Over TLS"));
      const stream = grpcJsStream<{ open: { title: string }[] }>(
        js.suggestions,
        "WatchSuggestions",
        { session_id: sessionId },
      );
      stream.on("error", () => {});
      const seen: string[][] = [];
      for await (const lists of stream) {
        seen.push(lists.open.map((s: { title: string }) => s.title).sort());
        if (seen.length === 1) await offer("t2", "Second over TLS");
        if (seen.length === 2) break;
      }
      stream.cancel();
      expect(seen).toEqual([["Over TLS"], ["Over TLS", "Second over TLS"]]);
    } finally {
      js.close();
    }
  });
});

describe.skipIf(!hasOpenssl)("npm start with TLS_CERT_FILE and TLS_KEY_FILE", () => {
  test("its start-up line says it serves HTTP/2 and HTTP/1.1 over TLS, at an https URL", async () => {
    const dir = tempDir("tls-start");
    const files = await selfSignedCert(dir.dir);
    const service = await spawnService(sharedRedisUrl(), {
      TLS_CERT_FILE: files.cert,
      TLS_KEY_FILE: files.key,
    });
    try {
      expect(service.output()).toMatch(
        /suggest-task listening on https:\/\/127\.0\.0\.1:\d+ \(gRPC, Connect and gRPC-Web; HTTP\/2 and HTTP\/1\.1 over TLS\)/,
      );
      expect(service.output()).not.toContain("h2c");
    } finally {
      await service.kill("SIGTERM");
      dir.remove();
    }
  });
});
